// Scheduler: the occurrence index.  Every replica keeps the next occurrence of every
// entry of its volumes on a UTC wheel, so a master change needs no rebuild; when an
// entry's fire time passes on this replica's clock its occurrence becomes due (tracked)
// and the entry's next one is armed.  Also the interned (volume, entry key) table that
// keys occurrences and votes.
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {

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

std::shared_ptr<const Entry> Scheduler::load_entry(const std::string& volume, const std::string& key, Version* version) {
  SchedulerHost::EntryRead read;
  if (version != nullptr) {
    read = host_.read_entry(volume, key);
    *version = read.version.value_or(Version{});
  } else {
    read.value = host_.store_get(volume, key);
  }
  if (!read.value) return nullptr;
  auto entry = decode_entry(*read.value);
  if (!entry.ok()) {
    ++counters_.bad_records;
    return nullptr;
  }
  return std::make_shared<const Entry>(std::move(entry).value());
}

bool Scheduler::load_definition(Occ& o) {
  o.entry_version = Version{};
  o.entry = entry_of(o.volume, o.id.entry_key) != nullptr ? load_entry(o.volume, o.id.entry_key, &o.entry_version) : nullptr;
  if (!o.entry) {
    o.entry_version = Version{};
    return false;
  }
  o.at_most_once = o.entry->semantics == Semantics::at_most_once;
  return true;
}

void Scheduler::entry_changed(const std::string& volume, const std::string& key, Clock now) {
  const auto id = find_interned(volume, key, SlotIndex::tag(interned_hash(volume, key)));
  if (!id) return;
  // The record as it stands now, the same for every occurrence of the entry.
  const std::optional<Version> now_version = host_.entry_version(volume, key);
  const bool stops = stops_everything(volume, key);
  for (auto it = occs_.lower_bound(OccKey{*id, INT64_MIN}); it != occs_.end() && it->first.entry == *id; ++it) {
    Occ& o = it->second;
    if (o.is<firing::Owned>() && o.entry) supersede_owned(o, now_version, stops);
    if (o.finished() || o.is<firing::Owned>() || !o.entry) continue;  // an owner finishes what it dispatched
    if (now_version.value_or(Version{}) == o.entry_version) continue;
    // An edit governs what falls due after it: o, due before, goes on as decided (a
    // delete or a pause stops everything not dispatched).
    if (!stops && now_version && o.fire_utc_ms < now_version->physical_ms) continue;
    mark(Mark::kEntryChanged);
    if (auto* c = std::get_if<firing::Claiming>(&o.phase)) c->superseded = true;
    if (o.is<firing::Preparing>()) to_tracking_from_preparing(o, now);
    if (o.idle()) o.entry = nullptr;  // decided again under the new definition
    touch(o);
  }
}

// An owner finishes what it dispatched — except prepared attempts that a change of the
// entry governs (a delete, a pause, an edit written no later than o's instant): they have
// not started, and a change acknowledged before the instant must stop them.  They are
// revoked (revoke_superseded), and o is decided again under the definition that stands
// before any new attempt (redecide_superseded).  An attempt that started already answers
// so, and runs on.
void Scheduler::supersede_owned(Occ& o, const std::optional<Version>& now_version, bool stops) {
  firing::Owned& own = o.as<firing::Owned>();
  if (own.superseded || !now_version || !(o.entry_version < *now_version)) return;
  if (!stops && o.fire_utc_ms < now_version->physical_ms) return;  // an edit governs what falls due after it
  const bool prepared = std::any_of(own.attempts.begin(), own.attempts.end(), [](const Attempt& a) {
    return a.prepared && (a.state == AttemptState::kSent || a.state == AttemptState::kAccepted);
  });
  if (!prepared) return;
  own.superseded = true;
  mark(Mark::kOwnedSuperseded);
  touch(o);
}

// Returns whether it sent a revoke (the step is done).
bool Scheduler::revoke_superseded(Occ& o, Attempt& a, Clock now) {
  assert(o.as<firing::Owned>().superseded);
  if (!a.prepared || a.revoke_tried || (a.state != AttemptState::kSent && a.state != AttemptState::kAccepted)) {
    return false;
  }
  a.revoke_tried = true;
  a.sent_mono_ms = now.mono_ms;  // at-least-once: the revoke's answer is awaited an accept timeout
  send_revoke(o, a, now);
  assert(a.state == AttemptState::kRevoking);
  return true;
}

// Every prepared attempt of a superseded o is resolved and a new one is due: o is decided
// under the definition that stands here now, with its semantics unchanged (the ownership
// was won under them).  Returns whether o finished (skipped).
bool Scheduler::redecide_superseded(Occ& o, Clock now) {
  firing::Owned& own = o.as<firing::Owned>();
  assert(own.superseded);
  own.superseded = false;
  const auto old_entry = o.entry;
  const Version old_version = o.entry_version;
  const bool at_most_once = o.at_most_once;
  if (!load_definition(o)) {
    o.entry = old_entry;  // what the records and events of the skip describe
    o.entry_version = old_version;
    o.at_most_once = at_most_once;
    to_finished(o, Outcome::kSkipped, "its entry was deleted before its instant", now);
    return true;
  }
  o.at_most_once = at_most_once;
  if (o.entry->paused) {
    to_finished(o, Outcome::kSkipped, "its entry was paused before its instant", now);
    return true;
  }
  return unscheduled(o, now);
}

bool Scheduler::unscheduled(Occ& o, Clock now) {
  if (o.entry) {
    const std::optional<int64_t> n = next_occurrence(*o.entry, o.id.scheduled_utc_ms - 1);
    if (n && *n == o.id.scheduled_utc_ms) {
      o.fire_utc_ms = fire_time(*o.entry, o.id.scheduled_utc_ms);
      return false;
    }
    // Due before the definition that no longer has it was written: it runs (an edit
    // governs what falls due after it), under the definition this node has — unless that
    // definition pauses the entry.
    if (o.fire_utc_ms < o.entry_version.physical_ms && !o.entry->paused) return false;
  } else if (!host_.entry_version(o.volume, o.id.entry_key)) {
    return false;  // not here yet (its write is on its way): nothing to decide
  }
  mark(Mark::kEntryChanged);
  to_finished(o, Outcome::kSkipped,
              !o.entry          ? "its entry was deleted"
              : o.entry->paused ? "its entry is paused"
                                : "its entry was changed and no longer schedules it",
              now);
  return true;
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
    // misfire window are beyond catching up (docs/firing.md, Catch-up).
    rec.cursor_utc_ms = std::max(entry.created_utc_ms - 1, now.utc_ms - entry.misfire_window_ms - 1);
    entry_index_.insert(rec.tag, slot, [&](uint32_t s) { return entries_[s].tag; });
  } else {
    slot = *found;
    EntryRec& rec = entries_[slot];
    if (rec.armed) utc_wheel_.cancel(rec.handle);
    rec.armed = false;
    // A re-created entry (a new creation instant: an edit) is enumerated again from its
    // creation: this replica may have enumerated past it under the old definition (ahead by
    // prepare_ahead, or behind by the edit's propagation), and the new definition's
    // occurrences since are due.  An instant both definitions have is the one occurrence
    // already tracked.  Not further back than half the linger time: what finished longer ago
    // may be forgotten, and would be tracked (and decided) anew.
    if (entry.created_utc_ms != rec.created_utc_ms) {
      rec.cursor_utc_ms = std::max(entry.created_utc_ms - 1, std::min(rec.cursor_utc_ms, now.utc_ms) -
                                                                 options_.terminal_linger_ms / 2);
    }
    // A trigger ("run now") is due when it is written, and this replica may have
    // enumerated past that instant already (ahead by prepare_ahead, or by a clock ahead of
    // the writer's): go back to the first trigger it does not track.  Only to one due less
    // than half the linger time ago by this clock: one it tracked then is still tracked
    // (so an untracked one is new here), and what lies between is found again as the same
    // occurrences.  A trigger that reaches a replica later than that is decided by the
    // replicas it reached in time (the writer first), or judged by the misfire policy.
    const int64_t bound = now.utc_ms - options_.terminal_linger_ms / 2;
    for (const Trigger& t : entry.triggers) {
      if (t.at_utc_ms > rec.cursor_utc_ms) break;  // in due order: the rest are ahead of the cursor
      if (t.at_utc_ms <= bound || find_occ(volume, OccurrenceId{key, t.at_utc_ms}) != nullptr) continue;
      rec.cursor_utc_ms = t.at_utc_ms - 1;
      break;
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

// Occurrences whose fire time passed on this replica's clock.  Collected first (handling
// them arms the entries' next occurrences on the same wheel), then handled at most
// max_due_per_tick at a time: the rest stay queued and the next tick is due at once.  A
// queued slot is handled only if it is still due and not back on the wheel (the entry may
// have changed or been removed meanwhile).
//
// An empty wheel is not polled (nor asked for its deadline): on most nodes of a large
// cluster it stays empty — they replicate no volume — and each look costs cache misses
// for nothing (~3% of the simulator's N = 1000 hour).  The wheel's clock then lags, which
// it allows: a poll may jump any distance, and a timer inserted meanwhile is placed
// relative to the old clock and at worst asks for one early poll.
void Scheduler::poll_due_entries(Clock now) {
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
      if (!rec.live || !rec.has_next() || (rec.armed && utc_wheel_.pending(rec.handle))) continue;
      entry_due(slot, now);
      drain(now);
      --budget;
    }
    // Catch-up: arming may have put past occurrences on the wheel again.
    if (due_backlog_.empty()) collect();
  }
}

// The UTC wheel reached an entry's next fire time: the occurrence becomes due on this
// replica, and the entry's following occurrence is armed.
void Scheduler::entry_due(uint32_t slot, Clock now) {
  EntryRec& rec = entries_[slot];
  if (!rec.live || !rec.has_next()) return;
  rec.armed = false;
  const std::string volume = volume_names_[rec.volume];
  std::string key(key_of(rec));
  Version version;
  const std::shared_ptr<const Entry> entry = load_entry(volume, key, &version);
  // Gone from the store (its removal is on its way to us): nothing is due.
  if (!entry) return;
  const OccurrenceId id{std::move(key), rec.next_scheduled_utc_ms};
  const int64_t fire = fire_time(*entry, id.scheduled_utc_ms);  // as armed: a changed definition re-arms
  rec.cursor_utc_ms = id.scheduled_utc_ms;
  rec.created_utc_ms = entry->created_utc_ms;
  arm_entry(slot, *entry);  // may reallocate nothing; rec stays valid (entries_ not resized)
  const bool master = active_ && masters_.count(volume) > 0;
  Occ* known = find_occ(volume, id);
  if (known == nullptr && drop_untracked_late(volume, id, *entry, entries_[slot], master, now)) return;
  Occ& o = known ? *known : track(volume, id, now, entry.get());
  o.fire_utc_ms = fire;
  o.at_most_once = entry->semantics == Semantics::at_most_once;
  if (master && !o.entry) {  // what decide would load again
    o.entry = entry;
    o.entry_version = version;
  }
  if (!o.due) {
    o.due = true;
    ++counters_.due;
    emit(FireEvent::Kind::kDue, o, now);
  }
  touch(o);
}

// Catch-up bound: an occurrence already superseded by a later due one, under a policy that
// will not run it, is not worth tracking (keeps a long outage from filling memory).  The
// master counts it.
bool Scheduler::drop_untracked_late(const std::string& volume, const OccurrenceId& id, const Entry& entry,
                                    const EntryRec& after, bool master, Clock now) {
  const int64_t lateness = now.utc_ms - fire_time(entry, id.scheduled_utc_ms);
  const bool superseded = after.has_next() && fire_time(entry, after.next_scheduled_utc_ms) <= now.utc_ms;
  const bool missed = lateness > entry.misfire_window_ms;
  const bool skipped = lateness > options_.misfire_threshold_ms && superseded && entry.misfire != MisfirePolicy::fire_all;
  if (!missed && !skipped) return false;
  if (!master) return true;
  if (missed) ++counters_.missed;
  else ++counters_.skipped;
  FireEvent& e = event_scratch_;
  e = FireEvent{};
  e.kind = missed ? FireEvent::Kind::kMissed : FireEvent::Kind::kSkipped;
  e.volume = volume;
  e.occ = id;
  e.at_most_once = entry.semantics == Semantics::at_most_once;
  e.lateness_ms = lateness;
  e.replaced = false;
  e.detail = missed ? "found later than its misfire window" : "found late and superseded by a later occurrence";
  host_.emit(e);
  return true;
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

std::optional<Scheduler::OccKey> Scheduler::known_occ_key(const std::string& volume, const OccurrenceId& id) const {
  const auto found = find_interned(volume, id.entry_key, SlotIndex::tag(interned_hash(volume, id.entry_key)));
  if (!found) return std::nullopt;
  return OccKey{*found, id.scheduled_utc_ms};
}

}  // namespace caesium::schedule
