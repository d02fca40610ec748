// Node core, part 2: membership glue — packets out, member events in, the master of
// each volume, this node's advertised meta, and spreading the cluster config.
#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/master.h"
#include "node/core/node.h"

namespace caesium::node {

namespace {

// "a, b, c" for the refusals of apply_config.
std::string joined(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out.append(i ? sep : "").append(parts[i]);
  return out;
}

}  // namespace

gossip::MemberMeta Node::self_meta() const {
  gossip::MemberMeta m;
  m.stream_addr = options_.stream_addr;
  m.api_addr = options_.api_addr;
  const NodeSpec* spec = config_.node(options_.id);
  m.priority = spec && spec->priority ? *spec->priority
                                      : default_priority(options_.capacity.cores, options_.capacity.memory_mb);
  if (spec) m.tags = spec->tags;
  m.capacity = options_.capacity;
  if (scheduler_) {
    const size_t running = scheduler_->running_invocations();
    const uint32_t slots = std::max<uint32_t>(1, options_.capacity.max_running);
    m.load.running = static_cast<uint32_t>(std::min<size_t>(running, slots));
    m.load.queued = static_cast<uint32_t>(running > slots ? running - slots : 0);
  }
  m.config_epoch = config_.epoch;
  m.protocol_version = gossip::kProtocolVersion;
  m.boot_id = boot_id_;
  size_t listed_bytes = 0;
  for (const auto& [name, v] : volumes_) {
    if (v.filled || v.departing) continue;
    m.unfilled_volumes.push_back(name);  // volumes_ is ordered: sorted
    listed_bytes += name.size();
  }
  // Long lists would crowd the datagram the meta travels in: "*" says "all of them".
  if (m.unfilled_volumes.size() > gossip::kMaxUnfilledListed || listed_bytes > kMaxUnfilledBytes ||
      (!m.unfilled_volumes.empty() &&
       !gossip::Membership::check_identity(options_.id, options_.gossip_addr, m, options_.membership).ok())) {
    m.unfilled_volumes = {"*"};  // always fits: the size estimate reserves room for it
  }
  return m;
}

void Node::refresh_meta(Clock now) {
  if (!membership_ || left_) return;
  const gossip::MemberMeta m = self_meta();
  if (m == membership_->self_meta()) return;
  // Load-only changes are rate-limited inside membership; a refused update is simply
  // retried on the next change.
  (void)membership_->set_meta(m, now.mono_ms);
}

void Node::drain_membership(Clock now) {
  if (!membership_) return;
  gossip::Outgoing out;
  while (membership_->poll_send(out)) {
    if (out.channel == gossip::Outgoing::Channel::kDatagram) {
      seal_and_queue(Channel::kDatagram, out.to_addr, wire::Body{std::get<gossip::Packet>(std::move(out.msg))}, now);
    } else {
      seal_and_queue(Channel::kStream, out.to_addr, wire::Body{std::get<gossip::PushPull>(std::move(out.msg))}, now);
    }
  }
  // Started with --first-start on an empty disk, and the peers hold our id from before.
  if (started_empty_ && amnesia_horizon_utc_ms() == 0 && membership_->stats().previous_life_seen > 0) {
    first_start_refuted(now);
  }
  gossip::MemberEvent ev;
  bool changed = false;
  while (membership_->poll_event(ev)) {
    NodeEvent e;
    e.kind = NodeEvent::Kind::kMember;
    e.subject = ev.node;
    e.state = ev.state;
    e.incarnation = ev.incarnation;
    e.text = ev.detail;
    if (ev.kind == gossip::MemberEvent::Kind::kConflict) {
      e.kind = NodeEvent::Kind::kWarning;
      e.text = "node id conflict: " + ev.node + ": " + ev.detail;
    }
    events_.push_back(std::move(e));
    if (ev.node == options_.id) continue;
    // The scheduler cares about reachability and restarts (boot id), not load.
    const gossip::MemberMeta* meta = membership_->meta_of(ev.node);
    // A replica that comes back (a healed partition, a restart) missed our pushes:
    // reconcile with it now rather than at the next sync interval.
    if (ev.kind == gossip::MemberEvent::Kind::kJoined || ev.kind == gossip::MemberEvent::Kind::kAlive) {
      // And our stream to it may wait behind a backoff that grew while it was away.
      reconnects_.push_back(ev.node);
      remember_peer(ev.node);
      for (auto& [name, v] : volumes_) {
        const VolumeSpec* spec = config_.volume(name);
        if (spec && std::binary_search(spec->replicas.begin(), spec->replicas.end(), ev.node)) {
          v.sync_soon_with = ev.node;
          v.next_sync_mono_ms = std::min(v.next_sync_mono_ms, now.mono_ms);
        }
      }
    }
    uint64_t& known_boot = known_boots_[ev.node];
    const uint64_t boot = meta ? meta->boot_id : 0;
    if (ev.kind != gossip::MemberEvent::Kind::kUpdated || boot != known_boot) {
      if (boot != known_boot) known_boot_changed_mono_[ev.node] = now.mono_ms;
      known_boot = boot;
      scheduler_->on_peer_change(ev.node, now);
      changed = true;
    }
    if (meta && meta->config_epoch > config_.epoch) want_newer_config(ev.node, meta->config_epoch, now);
  }
  if (changed) refresh_masters(now);
  // Refutations and meta changes raise our incarnation; persist it so a restart starts
  // above anything this process ever advertised.
  if (membership_->incarnation() > incarnation_) {
    incarnation_ = membership_->incarnation();
    storage_put("n/incarnation", encode_incarnation(incarnation_));
  }
  maybe_activate(now);
}

// The deciding master of each volume: the highest (priority, id) replica that is
// *alive* in our view.  docs/design.md names the highest reachable (alive or suspect)
// replica; a suspect master, though, is often a dead one, and letting it block firing
// until the suspicion times out would add the whole suspicion timeout to every
// occurrence due meanwhile.  Claims make two deciders at once safe (majorities
// intersect) and free of duplicates (the loser defers to the holder), so the
// next-in-line replica steps in as soon as the master is suspected.
std::optional<std::string> Node::elect_master(const VolumeSpec& spec) const {
  return gossip::choose_master(master_candidates(spec));
}

// This node's place in the master rule's order among the replicas alive in its view: 0
// when it is the master, 1 for the next, ...; 0 too when it is not a replica.
uint32_t Node::backup_rank(const VolumeSpec& spec) const {
  const std::vector<gossip::MasterCandidate> candidates = master_candidates(spec);
  const auto self = std::find_if(candidates.begin(), candidates.end(),
                                 [&](const gossip::MasterCandidate& c) { return c.id == options_.id; });
  if (self == candidates.end()) return 0;
  uint32_t rank = 0;
  for (const auto& c : candidates) rank += c.reachable && c.id != options_.id && gossip::outranks(c, *self) ? 1 : 0;
  return rank;
}

std::vector<gossip::MasterCandidate> Node::master_candidates(const VolumeSpec& spec) const {
  std::vector<gossip::MasterCandidate> candidates;
  for (const auto& r : spec.replicas) {
    gossip::MasterCandidate c;
    c.id = r;
    if (r == options_.id) {
      c.reachable = true;
      c.priority = membership_->self_meta().priority;
    } else if (const gossip::MemberMeta* meta = membership_->meta_of(r)) {
      c.reachable = membership_->state_of(r) == gossip::MemberState::kAlive;
      c.priority = meta->priority;
    }
    candidates.push_back(std::move(c));
  }
  return candidates;
}

void Node::refresh_masters(Clock now) {
  bool pending_sync = false;
  for (const auto& [volume, v_state] : volumes_) {
    if (v_state.departing) continue;  // depart_volume stood it down
    const VolumeSpec* spec = config_.volume(volume);
    std::optional<std::string> m;
    if (spec && !left_) m = elect_master(*spec);
    // Not synced yet: decide only if no peer replica can be asked (alone after the
    // startup grace), never on the state from before a restart.
    VolumeState& vs = volumes_.at(volume);
    if (spec) update_synced(vs, *spec, now);
    const bool deciding = m && *m == options_.id && vs.synced;
    if (!vs.synced) pending_sync = true;
    // Not the master but synced: a backup, deciding what the master makes no progress on
    // (SchedulerOptions::backup_step_ms).
    const uint32_t rank = spec && !left_ && vs.synced && !deciding ? backup_rank(*spec) : 0;
    scheduler_->set_backup_rank(volume, rank, now);
    auto& known = masters_[volume];
    if (known == m && deciding_[volume] == deciding) continue;
    known = m;
    deciding_[volume] = deciding;
    scheduler_->set_master(volume, deciding, now);
    NodeEvent e;
    e.kind = NodeEvent::Kind::kMaster;
    e.volume = volume;
    e.subject = m.value_or("");
    events_.push_back(std::move(e));
  }
  all_synced_ = !pending_sync;
}

// A node decides for a volume only once it has reconciled it, by sessions it began since
// it started, with a majority of each replica set (itself included) — or with every peer
// replica reachable, when those are fewer; or, when none is reachable after the startup
// grace, alone.  What the others ran, completed or deleted while this node was down is
// held by a majority, which any majority this node reconciled with meets.  A node deciding
// alone that sees a peer replica again stops until it has reconciled with it.
void Node::update_synced(VolumeState& vs, const VolumeSpec& spec, Clock now) {
  std::vector<std::string> reachable;
  for (const auto* set : {&spec.replicas, &spec.previous_replicas}) {
    for (const auto& r : *set) {
      if (r != options_.id && membership_->reachable(r)) reachable.push_back(r);
    }
  }
  if (vs.synced && vs.synced_alone && !reachable.empty()) {
    vs.synced = false;
    vs.synced_alone = false;
    vs.synced_with.clear();
    vs.reconcile_failed_with.clear();
    vs.reconciling_since_mono_ms = now.mono_ms;
    vs.sync_soon_with = reachable.front();
    vs.next_sync_mono_ms = now.mono_ms;
  }
  if (vs.synced) return;
  if (reachable.empty()) {
    // A node that restarted with its disk holds decisions the others may have overtaken
    // while it was down: it looks for a peer replica for reconcile_timeout before deciding
    // alone (a fresh node, with nothing to be stale about, for startup_grace).
    const int64_t grace = restored_ ? std::max(options_.startup_grace_ms, options_.reconcile_timeout_ms)
                                    : options_.startup_grace_ms;
    if (now.mono_ms - vs.opened_mono_ms < grace) return;
    vs.synced = true;
    vs.synced_alone = true;
    return;
  }
  // Replicas in view that no session completes with (a link that drops what we send):
  // the others may be deferring to this node, so it decides after reconcile_timeout with
  // what it has — at-least-once work it runs again is flagged a possible duplicate, and
  // at-most-once work is still decided by a majority's votes.
  if (now.mono_ms - std::max(vs.opened_mono_ms, vs.reconciling_since_mono_ms) >= options_.reconcile_timeout_ms) {
    vs.synced = true;
    return;
  }
  if (vs.synced_with.empty()) return;
  auto majority_of = [&](const std::vector<std::string>& set) {
    size_t n = 0;
    for (const auto& r : set) n += r == options_.id || vs.synced_with.count(r) ? 1 : 0;
    return set.empty() || 2 * n > set.size();
  };
  if (majority_of(spec.replicas) && majority_of(spec.previous_replicas)) {
    vs.synced = true;
    return;
  }
  // Fewer replicas in view than a majority: every one of them will do — once the view had
  // the startup grace to fill (right after a start it may hold one peer, itself restarted).
  const bool every_reachable = std::all_of(reachable.begin(), reachable.end(),
                                           [&](const std::string& r) { return vs.synced_with.count(r) > 0; });
  const int64_t since = std::max(vs.opened_mono_ms, vs.reconciling_since_mono_ms);
  if (every_reachable && now.mono_ms - since >= options_.startup_grace_ms) vs.synced = true;
}

std::optional<std::string> Node::master_of(const std::string& volume) const {
  auto it = masters_.find(volume);
  if (it != masters_.end()) return it->second;
  // A volume this node does not replicate: the same election, from this node's view
  // (for status, and for forwarding to the master first).
  const VolumeSpec* spec = config_.volume(volume);
  if (spec == nullptr || !membership_ || left_) return std::nullopt;
  return elect_master(*spec);
}

void Node::maybe_activate(Clock now) {
  if (active_ || left_ || !membership_) return;
  if (membership_->member_count() > 1 || now.mono_ms - started_mono_ms_ >= options_.startup_grace_ms) {
    active_ = true;
    refresh_masters(now);
    scheduler_->set_active(true, now);
  }
}

schedule::PeerView Node::peer(const std::string& node) const {
  schedule::PeerView p;
  if (node == options_.id) {
    p.reachable = !left_;
    p.known = true;
    p.direct = true;
    p.boot = boot_id_;
    p.load = static_cast<uint32_t>(scheduler_ ? scheduler_->running_invocations() : 0);
    p.slots = options_.capacity.max_running;
    p.clock_ahead_ms = 0;
    return p;
  }
  if (!membership_) return p;
  auto state = membership_->state_of(node);
  if (!state) return p;
  p.known = true;
  // Reachable in the membership view, or heard from just now: the view lags behind a
  // healed partition, and a peer whose frames we are reading is not gone.
  const int64_t* heard = last_heard_mono_.find(hash64(node));
  const bool heard_recently = heard != nullptr && last_.mono_ms - *heard <= options_.heard_recently_ms;
  p.reachable = gossip::is_reachable(*state) || heard_recently;
  // A suspect stays last choice as a worker even when heard within heard_recently: that
  // window is longer than a probe period, so a member that just died is "heard recently"
  // exactly when the failed probe makes it suspect, and a master taking over then would
  // dispatch to it (an at-most-once occurrence then waits for a revoke it never answers).
  // Likewise a member our failure detector holds dead although we still hear from it: a
  // one-way link (its packets reach us, ours do not reach it) looks exactly like this, and
  // a dispatch to it would be lost.
  p.suspect = *state == gossip::MemberState::kSuspect || !gossip::is_reachable(*state);
  p.direct = heard != nullptr && last_.mono_ms - *heard <= options_.direct_contact_ms;
  p.silent_ms = heard != nullptr ? last_.mono_ms - *heard : kNever;
  if (const gossip::MemberMeta* m = membership_->meta_of(node)) {
    p.boot = m->boot_id;
    p.load = m->load.running + m->load.queued;
    p.slots = m->capacity.max_running;
  }
  // Whichever learnt of a boot last: a worker that restarted answers a dispatch (naming its
  // new boot) before its new membership record reaches us — judged by the old one it would
  // look gone — and gossip may bring a restart before any frame of the new process does.
  const uint64_t h = hash64(node);
  const uint64_t* frame_boot = frame_boots_.find(h);
  const int64_t* frame_at = frame_boot_changed_mono_.find(h);
  auto meta_at = known_boot_changed_mono_.find(node);
  if (frame_boot != nullptr && *frame_boot != 0 && frame_at != nullptr &&
      (meta_at == known_boot_changed_mono_.end() || *frame_at >= meta_at->second)) {
    p.boot = *frame_boot;
  }
  p.clock_ahead_ms = clock_ahead(node);
  return p;
}

int64_t Node::clock_ahead(const std::string& node) const {
  if (node == options_.id) return 0;
  const ClockWatch::Peer* p = peer_clocks_.find(hash64(node));
  if (p == nullptr) return schedule::PeerView::kClockUnknown;
  return clock_watch_.ahead_now(*p, last_.utc_ms, last_.mono_ms).value_or(schedule::PeerView::kClockUnknown);
}

// --- cluster config -----------------------------------------------------------------------------

void Node::on_config_doc(const std::string& from, const wire::ConfigDoc& doc, Clock now) {
  auto config = decode_cluster_config(doc.document);
  if (!config || config->epoch != doc.epoch) {
    ++counters_.malformed;
    return;
  }
  if (config->epoch > config_.epoch) {
    (void)adopt_config(std::move(*config), now, true);
  } else if (config->epoch == config_.epoch && config->fingerprint() != config_.fingerprint()) {
    // Two different configs with the same epoch: reported, never merged.
    ++counters_.config_conflicts;
    NodeEvent e;
    e.kind = NodeEvent::Kind::kConfig;
    e.subject = from;
    e.text = "cluster config conflict: node " + from + " holds a different config with the same epoch " +
             std::to_string(config->epoch) + "; keeping ours";
    events_.push_back(std::move(e));
  }
}

// Asks `peer` for its newer config, at most once a second per peer.  A request held back
// by that limit, or lost (its answer never came), is made again from on_tick
// (retry_config_requests) until no reachable member advertises a newer epoch: member
// events alone came too rarely — a second epoch applied within a second of the first
// never spread (tests/cluster/scenario_reconfig.py found it).
void Node::want_newer_config(const std::string& peer, uint64_t epoch, Clock now) {
  auto& last = config_requested_mono_[peer];
  if (last == 0 || now.mono_ms - last >= 1'000) {
    last = now.mono_ms;
    queue_core(peer, wire::ConfigRequest{epoch}, false);
  }
  config_retry_mono_ = std::min(config_retry_mono_, last + 1'000);
}

void Node::retry_config_requests(Clock now) {
  if (now.mono_ms < config_retry_mono_) return;
  config_retry_mono_ = kNever;
  for (const auto& m : membership_->members()) {
    if (m.node == options_.id || m.meta.config_epoch <= config_.epoch || !membership_->reachable(m.node)) continue;
    want_newer_config(m.node, m.meta.config_epoch, now);
  }
}

bool Node::co_replica(std::string_view node) const {
  const std::vector<std::string> mine = config_.volumes_of(options_.id);
  const std::vector<std::string> theirs = config_.volumes_of(node);
  return std::find_first_of(mine.begin(), mine.end(), theirs.begin(), theirs.end()) != mine.end();
}

// The seeds alone do not bring a restarted node back to its replicas when a partition
// keeps it from every seed: its fresh view holds nobody, the replica on its side holds
// it dead and only pings it now and then (Membership::reconnect_probe), and it decides
// alone once reconcile_timeout passes, running again what that replica completed while
// it was down.  So it keeps the stream address of each co-replica it saw alive (a write
// only when the address is new) and joins through them too (Node::start).
void Node::remember_peer(const std::string& node) {
  if (node == options_.id || !co_replica(node)) return;
  const gossip::MemberMeta* meta = membership_->meta_of(node);
  if (meta == nullptr || meta->stream_addr.empty()) return;
  auto [it, added] = remembered_peers_.try_emplace(node, meta->stream_addr);
  if (!added && it->second == meta->stream_addr) return;
  it->second = meta->stream_addr;
  storage_put(std::string(kPeerPrefix) + node, meta->stream_addr);
}

void Node::forget_peers_not_co_replicas() {
  for (auto it = remembered_peers_.begin(); it != remembered_peers_.end();) {
    if (it->first != options_.id && co_replica(it->first)) {
      ++it;
      continue;
    }
    storage_erase(std::string(kPeerPrefix) + it->first);
    it = remembered_peers_.erase(it);
  }
}

Status Node::adopt_config(ClusterConfig config, Clock now, bool persist) {
  auto normalized = normalize(std::move(config));
  if (!normalized) return normalized.error();
  config_ = std::move(*normalized);
  if (persist) storage_put("c/config", config_.encode());
  if (!loading_) forget_peers_not_co_replicas();
  scheduler_->set_topology(config_.topology(), now);
  const std::vector<std::string> mine = config_.volumes_of(options_.id);
  std::vector<std::string> gone;
  for (const auto& [name, v] : volumes_) {
    (void)v;
    if (!std::binary_search(mine.begin(), mine.end(), name)) gone.push_back(name);
  }
  for (const auto& name : gone) {
    // Still in the config: hand over what only this node may hold before letting go.
    // Gone from the config: there is nobody to hand it to.
    if (config_.volume(name) == nullptr) {
      close_volume(name);
    } else {
      depart_volume(name, now);
    }
  }
  for (const auto& name : mine) {
    auto it = volumes_.find(name);
    if (it == volumes_.end()) {
      open_volume(name, now);
    } else if (it->second.departing) {
      it->second.departing = false;  // a replica again: fills anew from the others
      it->second.filled = false;
      it->second.filled_from.clear();
      it->second.next_sync_mono_ms = now.mono_ms;
    }
  }
  if (membership_) {
    refresh_meta(now);
    refresh_masters(now);
  }
  NodeEvent e;
  e.kind = NodeEvent::Kind::kConfig;
  e.text = "cluster config epoch " + std::to_string(config_.epoch) + " adopted";
  events_.push_back(std::move(e));
  if (proposal_ && config_.epoch >= proposal_->epoch) {
    // The epoch our proposal was for is decided: by it, or by another change.
    if (config_.epoch == proposal_->epoch && config_.encode() == proposal_->mine) {
      end_config_proposal(Status::success());
    } else {
      const std::string now_at = config_.epoch > proposal_->epoch ? "; this node is now at epoch " + std::to_string(config_.epoch) : "";
      end_config_proposal(Error("cluster config: epoch " + std::to_string(proposal_->epoch) +
                                    " was taken by another change (applied at about the same time through another "
                                    "node, or left half-agreed by one that went down" + now_at +
                                    "); yours was not applied: read the config (caesium config) and apply yours "
                                    "again on top of it",
                                "epoch"));
    }
  }
  return Status::success();
}

std::vector<std::string> Node::config_lagging(const ClusterConfig& next) const {
  std::set<std::string> out;
  if (!membership_) return {};
  for (const auto& v : next.volumes) {
    const VolumeSpec* old = config_.volume(v.name);
    if (old == nullptr || (old->replicas == v.replicas && old->previous_replicas == v.previous_replicas)) continue;
    for (const auto* set : {&old->replicas, &old->previous_replicas, &v.replicas, &v.previous_replicas}) {
      for (const auto& r : *set) {
        if (r == options_.id || !membership_->reachable(r)) continue;
        const gossip::MemberMeta* meta = membership_->meta_of(r);
        if (meta != nullptr && meta->config_epoch < config_.epoch) out.insert(r);
      }
    }
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> Node::config_unadopted(const ClusterConfig& next) const {
  std::vector<std::string> out;
  for (const auto& v : next.volumes) {
    const VolumeSpec* old = config_.volume(v.name);
    if (old == nullptr || (old->replicas == v.replicas && old->previous_replicas == v.previous_replicas)) continue;
    for (const auto* set : {&old->replicas, &old->previous_replicas}) {
      if (set->empty()) continue;
      std::vector<std::string> behind;
      for (const auto& r : *set) {
        if (r == options_.id) continue;
        const gossip::MemberMeta* meta = membership_ ? membership_->meta_of(r) : nullptr;
        if (meta == nullptr || meta->config_epoch < config_.epoch) behind.push_back(r);
      }
      if (set->size() - behind.size() >= set->size() / 2 + 1) continue;
      out.push_back(v.name + ": " + joined(behind, ", ") + " of [" + joined(*set, ",") + "]");
    }
  }
  return out;
}

std::vector<std::string> Node::config_nodes_not_alive() const {
  std::vector<std::string> out;
  for (const auto& n : config_.nodes) {
    if (n.id == options_.id) continue;
    if (!membership_ || membership_->state_of(n.id) != gossip::MemberState::kAlive) out.push_back(n.id);
  }
  return out;
}

std::vector<std::string> Node::config_unfilled(const ClusterConfig& next) const {
  std::vector<std::string> out;
  for (const auto& v : next.volumes) {
    const VolumeSpec* old = config_.volume(v.name);
    if (old == nullptr) continue;
    std::set<std::string> before(old->replicas.begin(), old->replicas.end()), after(v.replicas.begin(), v.replicas.end());
    before.insert(old->previous_replicas.begin(), old->previous_replicas.end());
    after.insert(v.previous_replicas.begin(), v.previous_replicas.end());
    if (std::includes(after.begin(), after.end(), before.begin(), before.end())) continue;  // nobody leaves
    for (const auto& r : v.replicas) {
      bool filled = false;
      if (r == options_.id) {
        auto it = volumes_.find(v.name);
        filled = it != volumes_.end() && it->second.filled;
      } else if (before.count(r) && membership_ && membership_->reachable(r)) {
        const gossip::MemberMeta* meta = membership_->meta_of(r);
        filled = meta != nullptr && meta->config_epoch >= config_.epoch &&
                 !std::binary_search(meta->unfilled_volumes.begin(), meta->unfilled_volumes.end(), v.name) &&
                 !std::binary_search(meta->unfilled_volumes.begin(), meta->unfilled_volumes.end(), std::string("*"));
      }
      if (!filled) out.push_back(v.name + ": " + r);
    }
  }
  return out;
}

Result<WriteAck> Node::apply_config(ClusterConfig config, Clock now, bool force) {
  last_ = now;
  if (config.epoch <= config_.epoch) {
    return Error("a new cluster config needs an epoch above the current " + std::to_string(config_.epoch), "epoch");
  }
  if (proposal_) {
    return Error("cluster config: a change of epoch " + std::to_string(proposal_->epoch) +
                     " is being agreed through this node; apply yours once it is done",
                 "epoch");
  }
  auto next = normalize(std::move(config));
  if (!next) return next.error();
  if (Status s = check_config_replicas(*next); !s.ok()) return s.error();
  if (Status s = check_config_change(config_, *next); !s.ok()) return s.error();
  if (const auto lagging = force ? std::vector<std::string>{} : config_lagging(*next); !lagging.empty()) {
    const std::string names = joined(lagging, ", ");
    return Error("cluster config: " + names + " still hold" + (lagging.size() == 1 ? "s" : "") +
                     " an epoch below the current " + std::to_string(config_.epoch) +
                     "; change replica sets again once every reachable replica holds it (caesium status shows "
                     "each node's epoch; gossip spreads a config within seconds)",
                 "epoch");
  }
  if (const auto unfilled = force ? std::vector<std::string>{} : config_unfilled(*next); !unfilled.empty()) {
    const std::string names = joined(unfilled, ", ");
    return Error("cluster config: replicas would leave while a remaining replica may not hold the volume's "
                     "entries yet (" + names + "): it must be reachable, have been a replica before this epoch "
                     "and have completed anti-entropy with a majority of the previous replicas; add new replicas first (with "
                     "previous_replicas), wait for them to sync (sync_interval), then remove the old ones; if "
                     "the replicas that hold the entries are lost for good, ?force=true (caesium config apply "
                     "--force) applies it anyway",
                 "volumes.replicas");
  }
  if (const auto unadopted = force ? std::vector<std::string>{} : config_unadopted(*next); !unadopted.empty()) {
    const std::string names = joined(unadopted, "; ");
    return Error("cluster config: fewer than a majority of a current replica set is known to hold epoch " +
                     std::to_string(config_.epoch) + " (" + names + "): a node cut off since before it could "
                     "still fire under the sets of the epoch before; change replica sets again once the rest "
                     "are back (caesium status shows each node's epoch); if they are lost for good, "
                     "?force=true (caesium config apply --force) applies it anyway",
                 "epoch");
  }
  if (!force) {
    // Two sides of a partition that each apply a config of the same epoch keep them both,
    // reported and never merged (docs/design.md §4), and a volume whose sets differ between
    // them can stall: each side waits for a master that, by its own config, is not one
    // (swarm seed 512 with --reconfig: a move applied on a cut-off pair while the other
    // side changed another volume; 78 at-least-once occurrences never ran after the
    // heal).  Only one side of a partition sees a majority of the nodes alive.
    // A config that lists no nodes has no majority to ask for.
    const std::vector<std::string> missing = config_nodes_not_alive();
    if (!config_.nodes.empty() && missing.size() >= config_.nodes.size() - config_.nodes.size() / 2) {
      return Error("cluster config: this node sees fewer than a majority of the cluster's nodes alive (not alive: " +
                       joined(missing, ", ") + "); apply the change through a node on the majority side, so that the other "
                       "side cannot apply a different config with the same epoch; if those nodes are lost for "
                       "good, ?force=true (caesium config apply --force) applies it anyway",
                   "nodes");
    }
  }
  WriteAck ack;
  if (!force && !config_.nodes.empty()) {
    // Agreed by a majority of the nodes first (node_config_vote.cpp); the API answers
    // once config_outcome says how it ended.
    ack.config_proposal = start_config_proposal(next->encode(), now);
  } else if (Status s = adopt_config(std::move(*next), now, true); !s.ok()) {
    return s.error();
  }
  pump(now);
  ack.durable_seq = write_barrier();
  return ack;
}

}  // namespace caesium::node
