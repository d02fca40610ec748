// Scheduler, part 1: the occurrence index (entries -> UTC wheel), occurrence records
// from the volume store, timers, purging.  Deciding is in scheduler_master.cpp, voting
// and running in scheduler_replica.cpp.
#include "schedule/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "base/hash.h"
#include "schedule/timing.h"

namespace caesium::schedule {

const char* to_string(FireEvent::Kind k) {
  switch (k) {
    case FireEvent::Kind::kDue: return "due";
    case FireEvent::Kind::kOwned: return "owned";
    case FireEvent::Kind::kDispatched: return "dispatched";
    case FireEvent::Kind::kAccepted: return "accepted";
    case FireEvent::Kind::kCompleted: return "completed";
    case FireEvent::Kind::kWithheld: return "withheld";
    case FireEvent::Kind::kMissed: return "missed";
    case FireEvent::Kind::kLost: return "lost";
    case FireEvent::Kind::kSkipped: return "skipped";
    case FireEvent::Kind::kRedispatched: return "redispatched";
    case FireEvent::Kind::kGranted: return "granted";
    case FireEvent::Kind::kDeferred: return "deferred";
    case FireEvent::Kind::kStarted: return "started";
  }
  return "?";
}

Scheduler::Scheduler(ProcessId self, SchedulerOptions options, SchedulerHost& host,
                     int64_t start_mono_ms, int64_t start_utc_ms)
    : self_(std::move(self)),
      options_(options),
      host_(host),
      last_{start_mono_ms, start_utc_ms},
      utc_wheel_(start_utc_ms),
      mono_wheel_(start_mono_ms),
      started_utc_ms_(start_utc_ms) {}

Scheduler::~Scheduler() = default;

// --- configuration ----------------------------------------------------------------------

uint64_t sets_hash(const Topology::Volume& v) {
  uint64_t h = hash64("caesium-replica-sets");
  for (const auto& r : v.replicas) h = hash_combine(h, hash64(r));
  h = hash_combine(h, v.replicas.size());
  for (const auto& r : v.previous_replicas) h = hash_combine(h, hash64(r));
  return hash_combine(h, v.previous_replicas.size());
}

void Scheduler::set_topology(Topology topology, Clock now) {
  last_ = now;
  topology_ = std::move(topology);
  for (auto& [name, v] : topology_.volumes) v.sets_hash = sets_hash(v);
  volume_quorum_sets_.clear();
  const Entry unbound;  // no binding: every replica is eligible
  for (const auto& [name, v] : topology_.volumes) volume_quorum_sets_[name] = make_quorum_sets(&v, unbound);
  // Entries of volumes this node no longer replicates are dropped from the index.
  std::vector<std::pair<std::string, std::string>> gone;
  for (const EntryRec& rec : entries_) {
    if (rec.live && !is_replica(volume_names_[rec.volume])) gone.emplace_back(volume_names_[rec.volume], key_of(rec));
  }
  for (const auto& [volume, key] : gone) remove_entry(volume, key);
  for (const auto& [name, v] : topology_.volumes) dirty_volumes_.insert(name);
}

void Scheduler::set_master(const std::string& volume, bool master, Clock now) {
  last_ = now;
  const bool was = masters_.count(volume) > 0;
  if (master == was) return;
  if (master) {
    masters_.insert(volume);
    dirty_volumes_.insert(volume);
  } else {
    masters_.erase(volume);
  }
}

void Scheduler::set_active(bool active, Clock now) {
  last_ = now;
  if (active && !active_) {
    for (const auto& v : masters_) dirty_volumes_.insert(v);
  }
  active_ = active;
}

void Scheduler::on_peer_change(const std::string& node, Clock now) {
  last_ = now;
  // Owner duties first: a worker of ours may have died.
  for (auto& [key, o] : occs_) {
    if (o.phase != Phase::kOwned || o.attempts.empty()) continue;
    const Attempt& a = o.attempts.back();
    if (a.info.worker == node) owner_step(o, now);
  }
  // Masters re-decide: an owner or a holder may have vanished, quorum may have changed.
  for (const auto& v : masters_) dirty_volumes_.insert(v);
  for (const auto& [name, v] : topology_.volumes) {
    (void)v;
    dirty_volumes_.insert(name);
  }
}

bool Scheduler::is_replica(const std::string& volume) const {
  auto it = topology_.volumes.find(volume);
  if (it == topology_.volumes.end()) return false;
  const auto& r = it->second.replicas;
  const auto& p = it->second.previous_replicas;
  return std::binary_search(r.begin(), r.end(), self_.node) || std::binary_search(p.begin(), p.end(), self_.node);
}

// --- records ------------------------------------------------------------------------------

void Scheduler::on_record(const std::string& volume, const std::string& key,
                          const std::optional<std::string>& value, Clock now) {
  last_ = now;
  if (!is_replica(volume)) return;
  if (is_entry_key(key)) {
    if (!value) {
      remove_entry(volume, key);
      return;
    }
    auto entry = decode_entry(*value);
    if (!entry.ok()) {
      ++counters_.bad_records;
      return;
    }
    upsert_entry(volume, key, *entry, now);
    return;
  }
  if (!is_occ_key(key)) return;
  // Parsed into a member whose strings keep their storage from one record to the next.
  ParsedOccKey& parsed = parsed_scratch_;
  if (!parse_occ_key(key, parsed)) {
    ++counters_.bad_records;
    return;
  }
  if (parsed.kind == ParsedOccKey::Kind::kOwner) {
    on_owner_record(volume, parsed, value, now);
  } else {
    on_worker_record(volume, parsed, value, now);
  }
}

void Scheduler::on_local_record(const std::string& key, const std::string& value) {
  auto parsed = parse_grant_key(key);
  if (!parsed) {
    ++counters_.bad_records;
    return;
  }
  auto vote = decode_vote(value);
  if (!vote.ok()) {
    ++counters_.bad_records;
    return;
  }
  const OccKey k = occ_key(parsed->volume, parsed->occ);
  if (votes_.insert_or_assign(k, std::move(*vote)).second) retain_interned(k.entry);
}

void Scheduler::on_owner_record(const std::string& volume, const ParsedOccKey& k,
                                const std::optional<std::string>& value, Clock now) {
  Occ* existing = find_occ(volume, k.occ);
  if (!value) {
    if (existing) existing->owner_records.erase(k.suffix);
    return;
  }
  auto rec = decode_owner_record(*value);
  if (!rec.ok()) {
    ++counters_.bad_records;
    return;
  }
  // Records of occurrences past retention are not worth tracking.
  if (k.occ.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms) return;
  Occ& o = existing ? *existing : track(volume, k.occ, now);
  o.owner_records[k.suffix] = std::move(rec).value();
  if (o.phase != Phase::kOwned && !terminal(o.phase)) reconsider(o, now);
}

void Scheduler::on_worker_record(const std::string& volume, const ParsedOccKey& k,
                                 const std::optional<std::string>& value, Clock now) {
  Occ* existing = find_occ(volume, k.occ);
  if (!value) {
    if (existing) existing->worker_records.erase(k.suffix);
    return;
  }
  auto rec = decode_worker_record(*value);
  if (!rec.ok()) {
    ++counters_.bad_records;
    return;
  }
  if (k.occ.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms) return;
  Occ& o = existing ? *existing : track(volume, k.occ, now);
  const WorkerRecord& w = o.worker_records[k.suffix] = std::move(rec).value();
  if (o.phase == Phase::kOwned) {
    for (auto& a : o.attempts) {
      if (a.info.fire_id != k.suffix) continue;
      if (finished(w.state)) {
        a.state = AttemptState::kFinished;
        uncount(a);  // (this was the leak that made the master look least loaded)
      } else if (w.state == WorkerState::kAccepted &&
                 (a.state == AttemptState::kSent || a.state == AttemptState::kRevoking)) {
        a.state = AttemptState::kAccepted;
        a.accepted_mono_ms = now.mono_ms;
      } else if (w.state == WorkerState::kRevoked &&
                 (a.state == AttemptState::kSent || a.state == AttemptState::kRevoking ||
                  a.state == AttemptState::kAccepted)) {
        // The worker's durable promise that it never runs the attempt, also after it had
        // accepted it (a prepared attempt revoked before its instant).  Its revoke reply may
        // have met the attempt marked accepted here by the acceptance record, and been
        // passed over (swarm seed 130 with --prepare-ahead 5s: the takeover waited for ever
        // on an attempt the worker had revoked).
        a.state = AttemptState::kRevoked;
        uncount(a);
      }
    }
    owner_step(o, now);
    return;
  }
  if (finished(w.state) && !terminal(o.phase)) {
    if (o.phase == Phase::kClaiming) release_grants(o, o.entry.get(), now);
    finish(o, Phase::kDone, "", now);
  }
}

// --- the occurrence index -------------------------------------------------------------------

uint32_t Scheduler::volume_id(const std::string& volume) {
  if (auto id = find_volume_id(volume)) return *id;
  volume_names_.push_back(volume);
  return static_cast<uint32_t>(volume_names_.size() - 1);
}

std::optional<uint32_t> Scheduler::find_volume_id(const std::string& volume) const {
  for (size_t i = 0; i < volume_names_.size(); ++i) {
    if (volume_names_[i] == volume) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

uint64_t Scheduler::slot_hash(uint32_t volume, std::string_view key) {
  static_assert(sizeof(void*) != 8 || sizeof(EntryRec) == 48, "an entry's slot grew: update the memory notes");
  return hash64(key) ^ (uint64_t{volume} * 0x9E3779B97F4A7C15ull);
}

std::optional<uint32_t> Scheduler::find_slot(uint32_t volume, std::string_view key) const {
  const uint32_t tag = SlotIndex::tag(slot_hash(volume, key));
  return entry_index_.find(tag, [&](uint32_t slot) {
    const EntryRec& rec = entries_[slot];
    return rec.tag == tag && rec.volume == volume && key_of(rec) == key;
  });
}

bool Scheduler::store_key(EntryRec& rec, std::string_view key) {
  if (key_garbage_ > (size_t{1} << 16) && 2 * key_garbage_ > key_arena_.size()) compact_keys();
  if (key_arena_.size() + key.size() > UINT32_MAX) {
    compact_keys();
    if (key_arena_.size() + key.size() > UINT32_MAX) return false;
  }
  if (key_arena_.size() + key.size() > key_arena_.capacity()) {
    // Grow by half, not double: the arena is the bulk of a replica's key bytes.
    key_arena_.reserve(std::max<size_t>({4096, key_arena_.capacity() + key_arena_.capacity() / 2,
                                         key_arena_.size() + key.size()}));
  }
  rec.key_offset = static_cast<uint32_t>(key_arena_.size());
  rec.key_size = static_cast<uint16_t>(key.size());
  key_arena_.insert(key_arena_.end(), key.begin(), key.end());
  return true;
}

void Scheduler::compact_keys() {
  std::vector<char> arena;
  arena.reserve(key_arena_.size() - key_garbage_);
  for (EntryRec& rec : entries_) {
    if (!rec.live) continue;
    const std::string_view key = key_of(rec);
    rec.key_offset = static_cast<uint32_t>(arena.size());
    arena.insert(arena.end(), key.begin(), key.end());
  }
  key_arena_ = std::move(arena);
  key_garbage_ = 0;
}

const Scheduler::EntryRec* Scheduler::entry_of(const std::string& volume, const std::string& key) const {
  const auto v = find_volume_id(volume);
  if (!v) return nullptr;
  const auto slot = find_slot(*v, key);
  return slot ? &entries_[*slot] : nullptr;
}

std::shared_ptr<const Entry> Scheduler::load_entry(const std::string& volume, const std::string& key) {
  auto value = host_.store_get(volume, key);
  if (!value) return nullptr;
  auto entry = decode_entry(*value);
  if (!entry.ok()) {
    ++counters_.bad_records;
    return nullptr;
  }
  return std::make_shared<const Entry>(std::move(entry).value());
}

std::optional<int64_t> Scheduler::next_scheduled(const std::string& volume, const std::string& key) const {
  const EntryRec* e = entry_of(volume, key);
  if (e == nullptr || !e->has_next()) return std::nullopt;
  return e->next_scheduled_utc_ms;
}

void Scheduler::upsert_entry(const std::string& volume, const std::string& key, const Entry& entry, Clock now) {
  if (key.size() > UINT16_MAX) {  // not an entry key (those are a few hundred bytes at most)
    ++counters_.bad_records;
    return;
  }
  const uint32_t v = volume_id(volume);
  const auto found = find_slot(v, key);
  uint32_t slot;
  if (!found) {
    if (!free_entry_slots_.empty()) {
      slot = free_entry_slots_.back();
      free_entry_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    EntryRec& rec = entries_[slot];
    rec = EntryRec{};
    if (!store_key(rec, key)) {
      ++counters_.bad_records;
      free_entry_slots_.push_back(slot);
      return;
    }
    rec.volume = v;
    rec.tag = SlotIndex::tag(slot_hash(v, key));
    rec.live = true;
    // A newly seen entry starts at its creation, but occurrences further back than its
    // misfire window are beyond catching up (DESIGN.md §6, catch-up).
    rec.cursor_utc_ms = std::max(entry.created_utc_ms - 1, now.utc_ms - entry.misfire_window_ms - 1);
    entry_index_.insert(rec.tag, slot, [&](uint32_t s) { return entries_[s].tag; });
  } else {
    slot = *found;
    EntryRec& rec = entries_[slot];
    if (rec.armed) utc_wheel_.cancel(rec.handle);
    rec.armed = false;
    // A re-created entry (a new creation instant) starts over from its creation.
    if (entry.created_utc_ms != rec.created_utc_ms) {
      rec.cursor_utc_ms = std::max(rec.cursor_utc_ms, entry.created_utc_ms - 1);
    }
  }
  entries_[slot].created_utc_ms = entry.created_utc_ms;
  arm_entry(slot, entry);
}

void Scheduler::remove_entry(const std::string& volume, const std::string& key) {
  const auto v = find_volume_id(volume);
  if (!v) return;
  const auto found = find_slot(*v, key);
  if (!found) return;
  const uint32_t slot = *found;
  EntryRec& rec = entries_[slot];
  entry_index_.erase(rec.tag, slot, [&](uint32_t s) { return entries_[s].tag; });
  key_garbage_ += rec.key_size;
  if (rec.armed) utc_wheel_.cancel(rec.handle);
  rec = EntryRec{};
  free_entry_slots_.push_back(slot);
}

void Scheduler::arm_entry(uint32_t slot, const Entry& entry) {
  EntryRec& rec = entries_[slot];
  assert(rec.live);
  assert(!rec.armed);
  const std::optional<int64_t> next = next_occurrence(entry, rec.cursor_utc_ms);
  rec.next_scheduled_utc_ms = next.value_or(kNoNext);
  if (!next) return;
  // Due on this replica prepare_ahead before its fire time (0 unless preparing ahead).
  rec.handle = utc_wheel_.insert(fire_time(entry, *next) - options_.prepare_ahead_ms, slot);
  rec.armed = true;
}

// The UTC wheel reached an entry's next fire time: the occurrence becomes due on this
// replica, and the entry's following occurrence is armed.
void Scheduler::entry_due(uint32_t slot, Clock now) {
  EntryRec& rec = entries_[slot];
  if (!rec.live || !rec.has_next()) return;
  rec.armed = false;
  const std::string volume = volume_names_[rec.volume];
  std::string key(key_of(rec));
  const std::shared_ptr<const Entry> entry = load_entry(volume, key);
  // Gone from the store (its removal is on its way to us): nothing is due.
  if (!entry) return;
  const OccurrenceId id{std::move(key), rec.next_scheduled_utc_ms};
  const int64_t fire = fire_time(*entry, id.scheduled_utc_ms);  // as armed: a changed definition re-arms
  rec.cursor_utc_ms = id.scheduled_utc_ms;
  rec.created_utc_ms = entry->created_utc_ms;
  arm_entry(slot, *entry);  // may reallocate nothing; rec stays valid (entries_ not resized)
  const EntryRec& after = entries_[slot];

  const int64_t lateness = now.utc_ms - fire;
  const bool master = active_ && masters_.count(volume) > 0;
  Occ* known = find_occ(volume, id);
  if (known == nullptr) {
    // Catch-up bound: an occurrence already superseded by a later due one, under a
    // policy that will not run it, is not worth tracking (keeps a long outage from
    // filling memory).  The master counts it.
    const bool superseded = after.has_next() && fire_time(*entry, after.next_scheduled_utc_ms) <= now.utc_ms;
    if (lateness > entry->misfire_window_ms ||
        (lateness > options_.misfire_threshold_ms && superseded &&
         entry->misfire != MisfirePolicy::fire_all)) {
      if (master) {
        const bool missed = lateness > entry->misfire_window_ms;
        if (missed) ++counters_.missed;
        else ++counters_.skipped;
        FireEvent e;
        e.kind = missed ? FireEvent::Kind::kMissed : FireEvent::Kind::kSkipped;
        e.volume = volume;
        e.occ = id;
        e.at_most_once = entry->semantics == Semantics::at_most_once;
        e.lateness_ms = lateness;
        e.detail = missed ? "found later than its misfire window" : "found late and superseded by a later occurrence";
        host_.emit(e);
      }
      return;
    }
  }
  Occ& o = known ? *known : track(volume, id, now, entry.get());
  o.fire_utc_ms = fire;
  o.at_most_once = entry->semantics == Semantics::at_most_once;
  if (master && !o.entry) o.entry = entry;  // what reconsider would load again
  if (!o.due) {
    o.due = true;
    ++counters_.due;
    emit(FireEvent::Kind::kDue, o, now);
  }
  reconsider(o, now);
}

uint64_t Scheduler::interned_hash(const std::string& volume, const std::string& entry_key) {
  return hash_combine(hash64(volume), hash64(entry_key));
}

std::optional<uint32_t> Scheduler::find_interned(const std::string& volume, const std::string& entry_key,
                                                 uint32_t tag) const {
  return interned_ids_.find(tag, [&](uint32_t id) {
    const InternedEntry& e = interned_[id];
    return e.tag == tag && e.entry_key == entry_key && e.volume == volume;
  });
}

uint32_t Scheduler::intern(const std::string& volume, const std::string& entry_key) {
  const uint32_t tag = SlotIndex::tag(interned_hash(volume, entry_key));
  if (auto id = find_interned(volume, entry_key, tag)) return *id;
  uint32_t id = 0;
  if (!free_interned_.empty()) {
    id = free_interned_.back();
    free_interned_.pop_back();
    interned_[id] = InternedEntry{volume, entry_key, tag, 0};
  } else {
    id = static_cast<uint32_t>(interned_.size());
    interned_.push_back(InternedEntry{volume, entry_key, tag, 0});
  }
  interned_ids_.insert(tag, id, [&](uint32_t i) { return interned_[i].tag; });
  return id;
}

void Scheduler::release_interned(uint32_t id) {
  InternedEntry& e = interned_[id];
  assert(e.refs > 0);
  if (--e.refs != 0) return;
  interned_ids_.erase(e.tag, id, [&](uint32_t i) { return interned_[i].tag; });
  e = InternedEntry{};  // gives the strings' memory back
  free_interned_.push_back(id);
}

std::optional<Scheduler::OccKey> Scheduler::known_occ_key(const std::string& volume, const OccurrenceId& id) {
  const auto found = find_interned(volume, id.entry_key, SlotIndex::tag(interned_hash(volume, id.entry_key)));
  if (!found) return std::nullopt;
  return OccKey{*found, id.scheduled_utc_ms};
}

Scheduler::Occ& Scheduler::track(const std::string& volume, const OccurrenceId& id, Clock now,
                                 const Entry* entry) {
  (void)now;
  const OccKey key = occ_key(volume, id);
  auto it = occs_.find(key);
  if (it != occs_.end()) return it->second;
  Occ& o = occs_[key];
  retain_interned(key.entry);
  o.serial = next_serial_++;
  o.volume = volume;
  o.id = id;
  o.fire_utc_ms = id.scheduled_utc_ms;
  std::shared_ptr<const Entry> loaded;
  if (entry == nullptr && entry_of(volume, id.entry_key) != nullptr) {
    loaded = load_entry(volume, id.entry_key);
    entry = loaded.get();
  }
  if (entry != nullptr) {
    o.fire_utc_ms = fire_time(*entry, id.scheduled_utc_ms);
    o.at_most_once = entry->semantics == Semantics::at_most_once;
  }
  occ_by_serial_[o.serial] = key;
  return o;
}

Scheduler::Occ* Scheduler::find_occ(const std::string& volume, const OccurrenceId& id) {
  const auto key = known_occ_key(volume, id);
  if (!key) return nullptr;
  auto it = occs_.find(*key);
  return it == occs_.end() ? nullptr : &it->second;
}

// --- timers -------------------------------------------------------------------------------

int64_t Scheduler::utc_to_mono(int64_t utc_ms) const {
  if (utc_ms == kNever) return kNever;
  return last_.mono_ms + (utc_ms - last_.utc_ms);
}

void Scheduler::set_timer(Occ& o, int64_t mono_ms) {
  if (o.timer_armed) {
    if (o.timer_mono_ms == mono_ms) return;
    mono_wheel_.cancel(o.timer);
    o.timer_armed = false;
  }
  o.timer_mono_ms = mono_ms;
  if (mono_ms == kNever) return;
  o.timer = mono_wheel_.insert(mono_ms, o.serial);
  o.timer_armed = true;
}

void Scheduler::on_tick(Clock now) {
  last_ = now;
  // Occurrences whose fire time passed on this replica's clock.  Collected first (the
  // handlers arm the entries' next occurrences on the same wheel), then handled at most
  // max_due_per_tick at a time: the rest stay queued and the next tick is due at once.
  // A queued slot is handled only if it is still due and not back on the wheel (the
  // entry may have changed or been removed meanwhile).
  //
  // An empty wheel is not polled (nor asked for its deadline): on most nodes of a large
  // cluster both wheels stay empty — they replicate no volume — and each look costs
  // cache misses for nothing (~3% of the simulator's N = 1000 hour).  The wheel's clock
  // then lags, which it allows: a poll may jump any distance, and a timer inserted
  // meanwhile is placed relative to the old clock and at worst asks for one early poll.
  auto collect = [&] {
    if (utc_wheel_.size() == 0) return;
    utc_wheel_.poll(now.utc_ms, [&](const wheel::Expired& e) { due_backlog_.push_back(static_cast<uint32_t>(e.payload)); });
  };
  collect();
  int64_t budget = std::max<int64_t>(1, options_.max_due_per_tick);
  for (int rounds = 0; rounds < 64 && budget > 0 && !due_backlog_.empty(); ++rounds) {
    while (budget > 0 && !due_backlog_.empty()) {
      const uint32_t slot = due_backlog_.front();
      due_backlog_.pop_front();
      const EntryRec& rec = entries_[slot];
      // Stale: removed, finished, or re-armed since the wheel gave it (its timer pending
      // again; a timer that is no longer pending fired, so its fire time has passed).
      if (!rec.live || !rec.has_next() || (rec.armed && utc_wheel_.pending(rec.handle))) {
        continue;
      }
      entry_due(slot, now);
      --budget;
    }
    // Catch-up: arming may have put past occurrences on the wheel again.
    if (due_backlog_.empty()) collect();
  }

  std::vector<uint64_t> timers;
  if (mono_wheel_.size() > 0) mono_wheel_.poll(now.mono_ms, [&](const wheel::Expired& e) { timers.push_back(e.payload); });
  for (uint64_t serial : timers) {
    auto it = occ_by_serial_.find(serial);
    if (it == occ_by_serial_.end()) continue;
    Occ& o = occs_.at(it->second);
    o.timer_armed = false;
    o.timer_mono_ms = kNever;
    reconsider(o, now);
  }

  start_held(now);

  if (!dirty_volumes_.empty()) {
    std::set<std::string> dirty;
    dirty.swap(dirty_volumes_);
    for (const auto& v : dirty) reconsider_volume(v, now);
  }

  if (now.mono_ms >= next_purge_mono_ms_) {
    next_purge_mono_ms_ = now.mono_ms + 5'000;
    purge(now);
  } else if (votes_expiring_) {
    purge_votes(now);
  }
}

int64_t Scheduler::next_deadline_mono() const {
  int64_t best = kNever;
  if (utc_wheel_.size() > 0) {
    if (auto d = utc_wheel_.next_deadline()) best = std::min(best, utc_to_mono(*d));
  }
  if (mono_wheel_.size() > 0) {
    if (auto d = mono_wheel_.next_deadline()) best = std::min(best, *d);
  }
  if (!held_.empty()) best = std::min(best, utc_to_mono(held_.begin()->first.first));
  if (!dirty_volumes_.empty()) best = std::min(best, last_.mono_ms);
  if (!due_backlog_.empty()) best = std::min(best, last_.mono_ms);
  if (!occs_.empty() || !votes_.empty()) best = std::min(best, votes_expiring_ ? last_.mono_ms : next_purge_mono_ms_);
  return best;
}

void Scheduler::purge(Clock now) {
  for (auto it = occs_.begin(); it != occs_.end();) {
    Occ& o = it->second;
    const bool linger_over = terminal(o.phase) && now.mono_ms - o.terminal_since_mono_ms > options_.terminal_linger_ms;
    // Unresolved occurrences this node only tracked are forgotten well after any
    // decision could still be made about them.
    const int64_t window = o.entry ? o.entry->misfire_window_ms : 0;
    const bool stale = o.phase == Phase::kTracking &&
                       now.utc_ms - o.fire_utc_ms > window + 2 * options_.terminal_linger_ms;
    const bool expired = o.id.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms;
    if ((linger_over || stale || expired) && o.phase != Phase::kOwned && o.phase != Phase::kClaiming) {
      if (o.timer_armed) mono_wheel_.cancel(o.timer);
      for (auto& a : o.attempts) uncount(a);
      occ_by_serial_.erase(o.serial);
      const uint32_t id = it->first.entry;
      it = occs_.erase(it);
      release_interned(id);
    } else {
      ++it;
    }
  }
  purge_votes(now);
}

void Scheduler::purge_votes(Clock now) {
  // Votes are ordered by instant, so the expired ones are a prefix.  A burst's votes
  // expire together a retention after it; at most purge_step of them go per turn, and
  // on_tick comes back at once for the rest (next_deadline_mono).
  size_t budget = std::max<size_t>(options_.purge_step, 1);
  auto expired = [&] {
    return !votes_.empty() && votes_.begin()->first.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms;
  };
  for (; budget > 0 && expired(); --budget) drop_vote(votes_.begin());
  votes_expiring_ = expired();
}

void Scheduler::drop_vote(Votes::iterator it) {
  const OccKey k = it->first;
  const InternedEntry& e = interned_[k.entry];
  host_.local_erase(grant_key(e.volume, OccurrenceId{e.entry_key, k.scheduled_utc_ms}));
  votes_.erase(it);
  release_interned(k.entry);
}

void Scheduler::check_invariants() const {
  assert(entry_index_.size() + free_entry_slots_.size() == entries_.size());
  assert(interned_ids_.size() + free_interned_.size() == interned_.size());
#ifndef NDEBUG
  {  // every id's refs counts the keys of occs_ and votes_ naming it; free ids have none
    std::vector<uint32_t> refs(interned_.size(), 0);
    for (const auto& [k, o] : occs_) ++refs[k.entry];
    for (const auto& [k, v] : votes_) ++refs[k.entry];
    for (uint32_t id = 0; id < interned_.size(); ++id) assert(refs[id] == interned_[id].refs);
    for (uint32_t id : free_interned_) assert(interned_[id].refs == 0 && interned_[id].entry_key.empty());
  }
#endif
  size_t live_key_bytes = 0;
  for (const EntryRec& e : entries_) live_key_bytes += e.live ? e.key_size : 0;
  assert(live_key_bytes + key_garbage_ == key_arena_.size());
  (void)live_key_bytes;
  // An armed entry's timer is pending, or it fired and the entry waits in due_backlog_
  // (a burst is handled max_due_per_tick entries per tick; the flag clears in entry_due).
  const std::set<uint32_t> queued(due_backlog_.begin(), due_backlog_.end());
  entry_index_.for_each([&](uint32_t slot) {
    assert(slot < entries_.size());
    const EntryRec& e = entries_[slot];
    assert(e.live);
    assert(e.volume < volume_names_.size());
    assert(e.key_offset + size_t{e.key_size} <= key_arena_.size());
    assert(find_slot(e.volume, key_of(e)) == std::optional<uint32_t>(slot));
    assert(!e.armed || utc_wheel_.pending(e.handle) || queued.count(slot) > 0);
    (void)queued;
    (void)e;
    (void)slot;
  });
  assert(occ_by_serial_.size() == occs_.size());
  // outstanding_ counts exactly the attempts marked counted, and only in-flight ones.
  std::map<std::string, uint32_t> counted;
  for (const auto& [k, o] : occs_) {
    for (const auto& a : o.attempts) {
      if (!a.counted) continue;
      ++counted[a.info.worker];
      assert(a.state == AttemptState::kProposing || a.state == AttemptState::kSent ||
             a.state == AttemptState::kAccepted || a.state == AttemptState::kRevoking);
    }
  }
  assert(counted == outstanding_);
  (void)counted;
  for (const auto& [k, o] : occs_) {
    assert(k.entry < interned_.size());
    assert(o.volume == interned_[k.entry].volume);
    assert(o.id.entry_key == interned_[k.entry].entry_key);
    assert(o.id.scheduled_utc_ms == k.scheduled_utc_ms);
    assert(!o.timer_armed || mono_wheel_.pending(o.timer));
    assert(o.phase != Phase::kOwned || o.entry != nullptr);
    (void)o;
  }
  assert(mono_wheel_.size() <= occs_.size());
}

}  // namespace caesium::schedule
