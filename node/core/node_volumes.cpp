// Node core, part 3: the volume stores — persistence of every change, pushes of local
// writes to the other replicas, periodic anti-entropy with one peer replica, and the
// retention sweeps (expired occurrence records, old tombstones).
#include <algorithm>
#include <limits>

#include "node/core/node.h"

namespace caesium::node {

void Node::open_volume(const std::string& name, Clock now) {
  VolumeState& v = volumes_[name];
  v.store = std::make_unique<schedule::VolumeStore>(name, options_.id, options_.store);
  v.store->set_observer([this, name](const schedule::Change& c) { on_store_change(name, c); });
  // Occurrence state past its retention is dropped by every replica without a
  // tombstone; refusing it on merge keeps anti-entropy from bringing it back.
  v.store->set_merge_filter([this](const schedule::Record& r) {
    if (!schedule::is_occ_key(r.key)) return true;
    const auto parsed = schedule::split_occ_key(r.key);
    if (!parsed) return false;
    return parsed->scheduled_utc_ms >= last_.utc_ms - options_.scheduler.occurrence_retention_ms;
  });
  // Reconcile at once (a restarted node must catch up before it decides anything);
  // later syncs are spread over the interval.
  v.opened_mono_ms = now.mono_ms;
  v.next_sync_mono_ms = now.mono_ms;
}

void Node::depart_volume(const std::string& name, Clock now) {
  VolumeState& v = volumes_.at(name);
  if (v.departing) return;
  v.departing = true;
  v.filled = false;
  v.filled_from.clear();
  v.push.clear();  // writes of ours not pushed yet reach the replicas by the hand-over
  v.held.clear();
  v.held_until.clear();
  v.acks.clear();
  v.next_sync_mono_ms = now.mono_ms;
  masters_.erase(name);
  deciding_.erase(name);
  scheduler_->set_master(name, false, now);
  scheduler_->set_backup_rank(name, 0, now);
  NodeEvent e;
  e.kind = NodeEvent::Kind::kConfig;
  e.volume = name;
  e.text = "no longer a replica of volume " + name + ": handing its records to a current replica";
  events_.push_back(std::move(e));
}

bool Node::fills_from(const VolumeSpec& spec, const std::string& peer) const {
  const auto& prev = spec.previous_replicas;
  if (prev.empty() || std::binary_search(prev.begin(), prev.end(), options_.id)) return true;
  return std::binary_search(prev.begin(), prev.end(), peer);
}

void Node::close_volume(const std::string& name) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.volume == name) it = sessions_.erase(it);
    else ++it;
  }
  volumes_.erase(name);
  masters_.erase(name);
}

void Node::on_store_change(const std::string& volume, const schedule::Change& change) {
  if (!loading_) {
    std::string storage_key;
    storage_key.reserve(3 + volume.size() + change.key.size());
    storage_key.append("v/").append(volume).append("/").append(change.key);
    if (change.new_record) {
      storage_put(std::move(storage_key), encode_stored_record(*change.new_record));
    } else {
      storage_erase(std::move(storage_key));
    }
  }
  DeferredRecord d;
  d.volume = volume;
  d.key = std::string(change.key);
  if (change.new_record && change.new_record->value) d.value = std::string(*change.new_record->value);
  deferred_records_.push_back(std::move(d));
}

Node::VolumeState* Node::volume_for_write(const std::string& volume) {
  // A departing volume still takes the scheduler's records: they are facts of this
  // node's own work (a handler that finishes after the node stopped replicating the
  // volume writes its completion here), pushed to the current replicas and handed over
  // with the rest.  Dropping them lost the completion of an at-most-once run, which a
  // later takeover then ran again (swarm seed 1163 with --reconfig).
  auto it = volumes_.find(volume);
  if (it != volumes_.end()) {
    ++it->second.local_writes;
    return &it->second;
  }
  ++counters_.misrouted;
  return nullptr;
}

void Node::store_put(const std::string& volume, const std::string& key, std::string value) {
  VolumeState* v = volume_for_write(volume);
  if (v == nullptr) return;
  schedule::Record rec = v->store->put(key, std::move(value), last_.utc_ms);
  v->held.erase(rec.key);
  v->push[rec.key] = std::move(rec);
}

void Node::store_put_lazy(const std::string& volume, const std::string& key, std::string value) {
  if (auto it = volumes_.find(volume); it != volumes_.end() && it->second.departing) {
    // A departing volume holds nothing back: what it writes now (a handler's completion)
    // must reach the current replicas before the volume closes (swarm --reconfig
    // --prepare-ahead seed 1832: a lazy completion was still held when the hand-over
    // closed the volume, and the at-most-once run was taken over and run again).
    store_put(volume, key, std::move(value));
    return;
  }
  VolumeState* vs = volume_for_write(volume);
  if (vs == nullptr) return;
  VolumeState& v = *vs;
  schedule::Record rec = v.store->put(key, std::move(value), last_.utc_ms);
  if (auto p = v.push.find(rec.key); p != v.push.end()) {
    p->second = std::move(rec);  // an earlier version already leaves at the next flush
    return;
  }
  auto [h, fresh] = v.held.insert_or_assign(rec.key, std::move(rec));
  // A record held again keeps its first deadline: holding never delays it further.
  if (fresh) v.held_until.emplace_back(last_.mono_ms + options_.lazy_push_hold_ms, h->first);
}

void Node::release_held(VolumeState& v, int64_t until_mono_ms, size_t max_records) {
  size_t released = 0;
  while (!v.held_until.empty() && v.held_until.front().first <= until_mono_ms && released < max_records) {
    if (auto h = v.held.find(v.held_until.front().second); h != v.held.end()) {
      v.push[h->first] = std::move(h->second);
      v.held.erase(h);
      ++released;
    }
    v.held_until.pop_front();
  }
}

std::optional<std::string> Node::store_get(const std::string& volume, const std::string& key) const {
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return std::nullopt;
  auto view = it->second.store->find(key);
  if (!view || !view->value) return std::nullopt;
  return std::string(*view->value);
}

std::optional<schedule::Version> Node::entry_version(const std::string& volume, const std::string& key) const {
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return std::nullopt;
  auto view = it->second.store->find(key);
  if (!view) return std::nullopt;
  return view->version();
}

schedule::SchedulerHost::EntryRead Node::read_entry(const std::string& volume, const std::string& key) const {
  EntryRead read;
  auto it = volumes_.find(volume);
  if (it == volumes_.end()) return read;
  auto view = it->second.store->find(key);
  if (!view) return read;
  read.version = view->version();
  if (view->value) read.value = std::string(*view->value);
  return read;
}

void Node::behind(const std::string& volume, const std::string& node) {
  auto it = volumes_.find(volume);
  if (it == volumes_.end() || !it->second.synced) return;
  it->second.sync_soon_with = node;
  it->second.next_sync_mono_ms = std::min(it->second.next_sync_mono_ms, last_.mono_ms);
}

bool Node::bursting(Clock now) const {
  return scheduler_->next_held_utc_ms() <= now.utc_ms + options_.burst_horizon_ms ||
         now.utc_ms <= scheduler_->last_held_start_utc_ms() + options_.burst_horizon_ms;
}

void Node::flush_pushes(Clock now) {
  // A leaving node holds nothing back; a bursting one holds lazy writes longer, and what
  // it held goes out in pushes of at most max_push_release records per flush, so that a
  // replica still firing its own part of the burst merges them between its runs.
  const int64_t release_until =
      left_ ? kNever : bursting(now) ? now.mono_ms - options_.burst_hold_ms : now.mono_ms;
  const size_t release_max = left_ ? std::numeric_limits<size_t>::max() : options_.max_push_release;
  for (auto& [name, v] : volumes_) {
    release_held(v, release_until, release_max);
    if (v.push.empty()) continue;
    std::vector<schedule::Record> records;
    records.reserve(v.push.size());
    for (auto& [k, r] : v.push) records.push_back(std::move(r));
    v.push.clear();
    const bool want_ack = v.push_wants_ack;
    v.push_wants_ack = false;
    const VolumeSpec* spec = config_.volume(name);
    if (spec == nullptr) continue;
    std::vector<std::string> peers = spec->replicas;
    peers.insert(peers.end(), spec->previous_replicas.begin(), spec->previous_replicas.end());
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    std::erase_if(peers, [&](const std::string& p) {
      return p == options_.id || !membership_->reachable(p);  // anti-entropy repairs the rest
    });
    for (size_t i = 0; i < peers.size(); ++i) {
      ++counters_.store_pushes_out;
      counters_.records_pushed += records.size();
      // The last peer takes the records themselves; the others get copies.
      queue_core(peers[i], wire::StorePush{name, i + 1 == peers.size() ? std::move(records) : records, want_ack},
                 false);
    }
  }
}

void Node::on_store_push(const std::string& from, wire::StorePush& push, Clock now) {
  auto it = volumes_.find(push.volume);
  if (it == volumes_.end()) {
    ++counters_.misrouted;
    return;
  }
  ++counters_.store_pushes_in;
  if (!push.want_ack && bursting(now)) {
    // Merged after the burst (merge_inbound): to this replica the push just took longer,
    // as it may on any network; what it carries is durable at its sender already.
    for (auto& rec : push.records) it->second.inbound.emplace_back(now.mono_ms, std::move(rec));
    return;
  }
  wire::StoreAck ack;
  ack.volume = push.volume;
  for (const auto& rec : push.records) {
    if (it->second.store->merge(rec, now.utc_ms)) ++counters_.records_merged;
    // Acknowledge what this replica now holds at that version or newer — a write of an
    // entry only once no grant of ours for it may still be dispatched on (the scheduler's
    // hold: Scheduler::ack_hold_until_mono), so that an acknowledged delete or edit is
    // one that no claim of the old definition can still win.
    if (!push.want_ack || it->second.store->compare_with_local(rec) < 0) continue;
    const int64_t hold =
        schedule::is_entry_key(rec.key) ? scheduler_->ack_hold_until_mono(push.volume, rec.key, now.mono_ms) : 0;
    if (hold > now.mono_ms) {
      it->second.held_acks.push_back(VolumeState::HeldAck{hold, now.mono_ms, from, rec.key, rec.version});
    } else {
      ack.records.emplace_back(rec.key, rec.version);
    }
  }
  if (!ack.records.empty()) queue_core(from, std::move(ack), true);
}

// Acknowledgements held for the scheduler's grants (on_store_push) go out once the hold
// has passed — looked at again, as a later grant may have moved it.
void Node::release_held_acks(Clock now) {
  for (auto& [name, v] : volumes_) {
    std::map<std::string, wire::StoreAck> out;
    std::deque<VolumeState::HeldAck> still;
    for (auto& h : v.held_acks) {
      if (h.until_mono_ms > now.mono_ms) {
        still.push_back(std::move(h));
        continue;
      }
      const int64_t hold = scheduler_->ack_hold_until_mono(name, h.key, h.written_mono_ms);
      if (hold > now.mono_ms) {
        h.until_mono_ms = hold;
        still.push_back(std::move(h));
        continue;
      }
      wire::StoreAck& ack = out[h.to];
      ack.volume = name;
      ack.records.emplace_back(std::move(h.key), std::move(h.version));
    }
    v.held_acks = std::move(still);
    for (auto& [to, ack] : out) queue_core(to, std::move(ack), true);
  }
}

void Node::merge_inbound(Clock now, bool all) {
  const bool burst = !all && bursting(now);
  size_t budget = all ? std::numeric_limits<size_t>::max() : options_.max_push_release;
  for (auto& [name, v] : volumes_) {
    while (!v.inbound.empty() && budget > 0 &&
           (!burst || v.inbound.front().first + options_.burst_hold_ms <= now.mono_ms)) {
      if (v.store->merge(v.inbound.front().second, now.utc_ms)) ++counters_.records_merged;
      v.inbound.pop_front();
      --budget;
    }
  }
}

void Node::on_store_ack(const std::string& from, const wire::StoreAck& ack) {
  auto it = volumes_.find(ack.volume);
  if (it == volumes_.end()) {
    ++counters_.misrouted;
    return;
  }
  for (const auto& [key, version] : ack.records) {
    VolumeState::AckSet& set = it->second.acks[key];
    set.updated_mono_ms = last_.mono_ms;
    auto& known = set.by_node[from];
    if (known < version) known = version;
  }
}

// --- anti-entropy -----------------------------------------------------------------------------

namespace {

// Narrows the candidates to `best`, else to `next`, else leaves them.
void prefer(std::vector<std::string>& peers, std::vector<std::string> best, std::vector<std::string> next) {
  if (!best.empty()) {
    peers = std::move(best);
  } else if (!next.empty()) {
    peers = std::move(next);
  }
}

}  // namespace

void Node::start_syncs(Clock now) {
  for (auto& [name, v] : volumes_) {
    if (now.mono_ms < v.next_sync_mono_ms) continue;
    // A routine reconciliation waits out a burst of prepared runs (at most burst_hold_ms):
    // in the burst the stores differ by the records whose pushes wait too, and a session
    // would carry them inside the window.  Filling, hand-overs and catching up do not wait.
    const bool routine = v.synced && v.filled && !v.departing && v.sync_soon_with.empty();
    if (routine && bursting(now)) {
      if (v.sync_deferred_since_mono_ms == 0) v.sync_deferred_since_mono_ms = now.mono_ms;
      if (now.mono_ms < v.sync_deferred_since_mono_ms + options_.burst_hold_ms) {
        v.next_sync_mono_ms = now.mono_ms + options_.burst_horizon_ms;
        continue;
      }
    }
    v.sync_deferred_since_mono_ms = 0;
    const int64_t jitter = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(std::max<int64_t>(1, options_.sync_interval_ms / 4))));
    v.next_sync_mono_ms = now.mono_ms + options_.sync_interval_ms - options_.sync_interval_ms / 8 + jitter;
    if (v.initiator_session != 0) continue;
    const VolumeSpec* spec = config_.volume(name);
    if (spec == nullptr) continue;
    if (v.departing) {
      // The hand-over goes to a current replica (previous ones are leaving too).
      std::vector<std::string> to;
      for (const auto& r : spec->replicas) {
        if (r != options_.id && membership_->reachable(r)) to.push_back(r);
      }
      if (to.empty()) continue;
      start_sync(name, v, to[rng_.below(to.size())], now);
      continue;
    }
    // Every replica, previous ones included (during a change they hold what the new
    // ones lack); until the volume is filled, only those it can be filled from.
    std::vector<std::string> peers;
    for (const auto* set : {&spec->replicas, &spec->previous_replicas}) {
      for (const auto& r : *set) {
        if (r != options_.id && membership_->reachable(r)) peers.push_back(r);
      }
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    if (!v.filled) {
      // The previous replicas it has not filled from yet, else any it can fill from.
      std::vector<std::string> sources, fresh;
      for (const auto& p : peers) {
        if (!fills_from(*spec, p)) continue;
        sources.push_back(p);
        if (!v.filled_from.count(p)) fresh.push_back(p);
      }
      prefer(peers, std::move(fresh), std::move(sources));
    }
    if (!v.synced) {
      // Reconciling after a start: each session with another replica (update_synced),
      // those a session failed with last.
      std::vector<std::string> fresh, untried;
      for (const auto& p : peers) {
        if (v.synced_with.count(p)) continue;
        fresh.push_back(p);
        if (!v.reconcile_failed_with.count(p)) untried.push_back(p);
      }
      prefer(peers, std::move(untried), std::move(fresh));
    }
    if (peers.empty()) {
      // Nobody to reconcile with yet (still joining): an unsynced volume asks again soon.
      if (!v.synced) v.next_sync_mono_ms = now.mono_ms + options_.reconcile_retry_ms;
      continue;
    }
    std::string peer = peers[rng_.below(peers.size())];
    if (!v.sync_soon_with.empty() &&
        std::find(peers.begin(), peers.end(), v.sync_soon_with) != peers.end()) {
      peer = v.sync_soon_with;
    }
    v.sync_soon_with.clear();
    start_sync(name, v, peer, now);
  }
}

bool Node::unreconciled_peer(const std::string& volume, const VolumeState& v) const {
  const VolumeSpec* spec = config_.volume(volume);
  if (spec == nullptr) return false;
  for (const auto* set : {&spec->replicas, &spec->previous_replicas}) {
    for (const auto& r : *set) {
      if (r != options_.id && membership_->reachable(r) && !v.synced_with.count(r) &&
          !v.reconcile_failed_with.count(r)) {
        return true;
      }
    }
  }
  return false;
}

void Node::reconcile_session_failed(const std::string& volume, VolumeState& v, const std::string& peer, Clock now) {
  if (v.synced) return;
  v.reconcile_failed_with.insert(peer);
  v.next_sync_mono_ms = now.mono_ms + (unreconciled_peer(volume, v) ? 0 : options_.reconcile_retry_ms);
}

void Node::start_sync(const std::string& volume, VolumeState& v, const std::string& peer, Clock now) {
  const uint64_t id = rng_.next_u64() | 1;
  Session s;
  s.volume = volume;
  s.peer = peer;
  s.sync = std::make_unique<gossip::SyncSession>(gossip::SyncSession::Role::kInitiator, v.store.get(), id, options_.sync);
  s.last_activity_mono_ms = now.mono_ms;
  s.writes_at_start = v.local_writes;
  queue_core(peer, s.sync->start(now.utc_ms), false);
  sessions_.emplace(std::make_pair(peer, id), std::move(s));
  v.initiator_session = id;
  ++counters_.syncs_started;
}

void Node::on_sync(const std::string& from, const gossip::SyncMessage& msg, Clock now) {
  auto vit = volumes_.find(msg.volume);
  if (vit == volumes_.end()) {
    ++counters_.misrouted;
    return;
  }
  const auto key = std::make_pair(from, msg.session_id);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    if (msg.seq != 0) return;  // the rest of a session we already dropped
    Session s;
    s.volume = msg.volume;
    s.peer = from;
    s.sync = std::make_unique<gossip::SyncSession>(gossip::SyncSession::Role::kResponder, vit->second.store.get(),
                                                   msg.session_id, options_.sync);
    s.writes_at_start = vit->second.local_writes;
    it = sessions_.emplace(key, std::move(s)).first;
  }
  Session& s = it->second;
  s.last_activity_mono_ms = now.mono_ms;
  const uint64_t applied_before = s.sync->stats().records_applied;
  auto reply = s.sync->on_message(msg, now.utc_ms);
  counters_.sync_records_applied += s.sync->stats().records_applied - applied_before;
  if (!reply) {
    ++counters_.syncs_failed;
  } else if (reply->has_value()) {
    queue_core(from, std::move(**reply), false);
  }
  if (!reply || s.sync->done()) {
    bool handed_over = false;
    if (reply && !s.sync->failed()) {
      ++counters_.syncs_completed;
      // A departing volume is handed over once a session with a current replica had
      // nothing of ours to send: that replica then holds everything this node does.
      if (vit->second.departing) {
        const VolumeSpec* now_spec = config_.volume(msg.volume);
        handed_over = s.sync->stats().records_sent == 0 && now_spec != nullptr &&
                      std::binary_search(now_spec->replicas.begin(), now_spec->replicas.end(), from);
        if (handed_over && s.writes_at_start != vit->second.local_writes) {
          // Written to since the session began (a handler finished meanwhile): the session
          // compared what was there before, so it cannot vouch for the new records.
          handed_over = false;
          vit->second.next_sync_mono_ms = now.mono_ms;
        } else if (handed_over && scheduler_->running_in(msg.volume)) {
          // A handler of the volume still runs here: its completion record is yet to come.
          handed_over = false;
          vit->second.next_sync_mono_ms = now.mono_ms + 1'000;
        } else if (!handed_over) {
          vit->second.next_sync_mono_ms = now.mono_ms;  // again at once
        }
      }
      // Only a session this process began reconciles it: its messages were computed from
      // both stores as they were after it started.  A session the peer began may have been
      // begun before this node restarted, its first message queued behind the reconnect
      // backoff, and a digest from then may match what this node's disk still holds.
      if (!vit->second.synced && s.sync->role() == gossip::SyncSession::Role::kInitiator) {
        vit->second.synced_with.insert(from);
        refresh_masters(now);
        // The next replica at once — only one not reconciled with yet.  When every one in
        // view is, the volume waits for the grace (too few in view for a majority) or for
        // another replica to appear; a session begun again at once with the same peer
        // adds nothing, and with a peer that answers in no time the two would trade
        // sessions for ever within one instant (tests/sim/regress_plain_seed_18510.toml).
        if (!vit->second.synced) {
          vit->second.next_sync_mono_ms = now.mono_ms + (unreconciled_peer(msg.volume, vit->second)
                                                              ? 0 : options_.reconcile_retry_ms);
        }
      }
      const VolumeSpec* spec = config_.volume(msg.volume);
      if (!vit->second.departing && !vit->second.filled && spec != nullptr && fills_from(*spec, from)) {
        const auto& prev = spec->previous_replicas;
        if (prev.empty() || std::binary_search(prev.begin(), prev.end(), options_.id)) {
          vit->second.filled = true;
        } else {
          const gossip::MemberMeta* meta = membership_ ? membership_->meta_of(from) : nullptr;
          if (meta != nullptr && meta->config_epoch >= config_.epoch) vit->second.filled_from.insert(from);
          // Only the previous replicas of this config count: a session with a node of an
          // earlier change's previous set says nothing about this one's.
          const auto counted = std::count_if(prev.begin(), prev.end(),
                                             [&](const std::string& r) { return vit->second.filled_from.count(r) > 0; });
          vit->second.filled = static_cast<size_t>(counted) >= prev.size() / 2 + 1;
        }
        if (vit->second.filled) refresh_meta(now);
      }
    }
    if (s.sync->role() == gossip::SyncSession::Role::kInitiator && vit->second.initiator_session == msg.session_id) {
      vit->second.initiator_session = 0;
      if (!reply || s.sync->failed()) reconcile_session_failed(msg.volume, vit->second, from, now);
    }
    sessions_.erase(it);
    if (handed_over) {
      close_volume(msg.volume);
      NodeEvent e;
      e.kind = NodeEvent::Kind::kConfig;
      e.volume = msg.volume;
      e.text = "volume " + msg.volume + " handed over to " + from + "; closed";
      events_.push_back(std::move(e));
    }
  }
}

std::vector<std::pair<std::string, uint64_t>> Node::volume_digests() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [name, v] : volumes_) {
    if (!v.departing) out.emplace_back(name, v.store->root_digest());
  }
  return out;
}

const schedule::VolumeStore* Node::store(const std::string& volume) const {
  auto it = volumes_.find(volume);
  return it == volumes_.end() ? nullptr : it->second.store.get();
}

// --- retention ------------------------------------------------------------------------------

// Sessions whose peer went silent (lost messages, partition, crash) are dropped; the
// next interval starts a fresh one.
void Node::expire_sessions(Clock now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now.mono_ms - it->second.last_activity_mono_ms >= options_.sync_session_timeout_ms) {
      auto v = volumes_.find(it->second.volume);
      if (v != volumes_.end() && v->second.initiator_session == it->first.second) {
        v->second.initiator_session = 0;
        reconcile_session_failed(it->second.volume, v->second, it->first.first, now);
      }
      ++counters_.syncs_failed;
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

// Notification entries looked at per volume per maintenance round (they are few: one per
// failure, miss or loss notified, kept an occurrence retention).
constexpr size_t kNotificationsPurgedPerRound = 512;

void Node::maintenance(Clock now) {
  for (auto& [name, v] : volumes_) {
    // Acknowledgements only matter while an API write waits for them.
    for (auto it = v.acks.begin(); it != v.acks.end();) {
      if (now.mono_ms - it->second.updated_mono_ms > 2 * kMsPerMinute) it = v.acks.erase(it);
      else ++it;
    }
    v.purging_tombstones = true;
    v.sweep.start();
    purge_notifications(name, now, kNotificationsPurgedPerRound);
  }
  maintenance_running_ = true;
  maintenance_step(now);
}

// One bounded step of the round maintenance() started: at most maintenance_step_records
// tombstones purged or occurrence records visited, over all volumes.  on_tick calls it
// again (next_deadline_mono says "now") until the round is done.
void Node::maintenance_step(Clock now) {
  const int64_t horizon = now.utc_ms - options_.scheduler.occurrence_retention_ms;
  size_t budget = std::max<size_t>(options_.maintenance_step_records, 1);
  maintenance_running_ = false;
  for (auto& [name, v] : volumes_) {
    if (budget > 0 && v.purging_tombstones) {
      const size_t purged = v.store->purge_tombstones(now.utc_ms, budget);
      if (purged < budget) v.purging_tombstones = false;
      budget -= purged;
    }
    if (budget > 0 && !v.purging_tombstones && v.sweep.running()) {
      budget -= v.sweep.step(*v.store, horizon, budget).visited;
    }
    if (v.purging_tombstones || v.sweep.running()) maintenance_running_ = true;
  }
}

}  // namespace caesium::node
