// The harness (tests/unit/firing_harness.h), part 2: configuration and views, processes
// (start, crash, restart), records, runs and events, entries.  Part 1
// (firing_harness.cpp): the network and time.

#include "tests/unit/firing_harness_internal.h"

namespace caesium::firing_test {

// --- configuration and views ---------------------------------------------------------------------

void Cluster::set_master(const std::string& id, bool master, const std::string& volume) {
  Member& m = member(id);
  if (master) m.masters.insert(volume);
  else m.masters.erase(volume);
  turn(m, [&](Scheduler& s, Clock now) { s.set_master(volume, master, now); });
}

void Cluster::make_master(const std::string& id, const std::string& volume) {
  for (const auto& n : ids_) {
    if (n != id) set_master(n, false, volume);
  }
  set_master(id, true, volume);
}

void Cluster::set_active(const std::string& id, bool active) {
  Member& m = member(id);
  m.active = active;
  turn(m, [&](Scheduler& s, Clock now) { s.set_active(active, now); });
}

void Cluster::set_topology(const std::string& id, Topology topology) {
  Member& m = member(id);
  m.topology = topology;
  turn(m, [&](Scheduler& s, Clock now) { s.set_topology(topology, now); });
}

ObservedView& Cluster::view(const std::string& observer, const std::string& peer) {
  return member(observer).views[peer];
}

void Cluster::notify(const std::string& observer, const std::string& peer) {
  turn(member(observer), [&](Scheduler& s, Clock now) { s.on_peer_change(peer, now); });
}

void Cluster::change_view(const std::string& observer, const std::string& peer,
                                 const std::function<void(ObservedView&)>& f) {
  f(view(observer, peer));
  notify(observer, peer);
}

void Cluster::change_views_of(const std::string& peer, const std::function<void(ObservedView&)>& f) {
  for (const auto& o : ids_) {
    if (o != peer && up(o)) change_view(o, peer, f);
  }
}

void Cluster::set_indirect(const std::string& observer, const std::string& peer) {
  change_view(observer, peer, [](ObservedView& v) { v.direct = false; });
}

void Cluster::suspect(const std::string& peer) {
  change_views_of(peer, [&](ObservedView& v) {
    v.suspect = true;
    v.direct = false;
    if (!v.silent_since_t) v.silent_since_t = t_;
  });
}

void Cluster::declare_dead(const std::string& peer) {
  suspect(peer);
  change_views_of(peer, [](ObservedView& v) { v.reachable = false; });
}

void Cluster::recover(const std::string& peer) {
  change_views_of(peer, [](ObservedView& v) { v = ObservedView{}; });
}

PeerView Cluster::peer_view(const Member& observer, const std::string& peer) const {
  PeerView p;
  if (peer == observer.id) {
    p.reachable = p.known = p.direct = true;
    p.boot = observer.boot;
    p.load = static_cast<uint32_t>(observer.sched ? observer.sched->running_invocations() : 0);
    p.slots = 8;
    p.silent_ms = 0;
    p.clock_ahead_ms = 0;
    return p;
  }
  const Member* other = find(peer);
  if (other == nullptr) return p;  // not a member at all
  auto it = observer.views.find(peer);
  const ObservedView v = it == observer.views.end() ? ObservedView{} : it->second;
  p.reachable = v.reachable;
  p.suspect = v.suspect;
  p.direct = v.direct;
  p.known = v.known;
  p.boot = v.boot.value_or(other->boot);
  p.load = v.load;
  p.slots = v.slots;
  p.silent_ms = v.silent_since_t ? t_ - *v.silent_since_t : 0;
  p.clock_ahead_ms = v.clock_ahead_ms.value_or(other->skew_ms - observer.skew_ms);
  return p;
}

// --- processes -----------------------------------------------------------------------------------

void Cluster::start(Member& m, Disk disk, bool active) {
  const Clock now = clock(m.id);
  if (disk == Disk::kWipe) {
    m.disk_store.clear();
    m.disk_local.clear();
    m.horizon_utc = now.utc_ms + 2 * options_.scheduler.max_clock_skew_ms;
  }
  m.store = m.disk_store;
  m.local = m.disk_local;
  m.batch.clear();
  m.written = m.durable = 0;
  m.outbox.clear();
  m.self.clear();
  m.echoes.clear();
  m.running.clear();
  ++m.generation;
  m.boot = (rng_.next_u64() & 0xffff'ffff'0000ULL) | (m.index << 8) | (m.generation & 0xff);
  m.host = std::make_unique<Host>(*this, m);
  m.sched = std::make_unique<Scheduler>(schedule::ProcessId{m.id, m.boot}, options_.scheduler, *m.host, now.mono_ms,
                                        now.utc_ms);
  m.up = true;
  m.sched->set_amnesia_horizon(m.horizon_utc);
  turn(m, [&](Scheduler& s, Clock c) {
    s.set_topology(m.topology, c);
    for (const auto& [k, rec] : m.store) s.on_record(k.first, k.second, live(rec), c);  // entries sort first
    for (const auto& [k, v] : m.local) {
      if (k.rfind(schedule::kGrantPrefix, 0) == 0) s.on_local_record(k, v);
    }
    for (const auto& v : m.masters) s.set_master(v, true, c);
    m.active = active;
    s.set_active(active, c);
  });
}

void Cluster::crash(const std::string& id) {
  Member& m = member(id);
  if (!m.up) return;
  m.up = false;
  m.sched.reset();
  m.host.reset();
  for (auto& [inv, index] : m.running) runs_[index].crashed = true;
  m.running.clear();
  m.masters.clear();
}

void Cluster::restart(const std::string& id, Disk disk, bool active) {
  Member& m = member(id);
  crash(id);
  start(m, disk, active);
  for (const auto& o : ids_) {
    if (o != id && up(o)) notify(o, id);  // the membership learns the new incarnation
  }
}

// --- records -------------------------------------------------------------------------------------

void Cluster::put_entry(const Entry& e) { put_entry_on(e, ids_); }

void Cluster::put_entry_on(const Entry& e, const std::vector<std::string>& nodes) {
  if (auto s = schedule::validate(e); !s.ok()) throw HarnessError("invalid entry: " + s.error().message);
  const std::string key = schedule::entry_key(e);
  const Record rec{schedule::encode_entry(e), next_version_++};
  for (const auto& id : nodes) {
    Member& m = member(id);
    m.disk_store[{kVolume, key}] = rec;
    if (!m.up) continue;
    m.store[{kVolume, key}] = rec;
    turn(m, [&](Scheduler& s, Clock now) { s.on_record(kVolume, key, live(rec), now); });
  }
}

void Cluster::delete_entry_on(const std::string& key, const std::vector<std::string>& nodes) {
  const Record rec{{}, next_version_++, true};
  for (const auto& id : nodes) {
    Member& m = member(id);
    m.disk_store[{kVolume, key}] = rec;
    if (!m.up) continue;
    m.store[{kVolume, key}] = rec;
    turn(m, [&](Scheduler& s, Clock now) { s.on_record(kVolume, key, std::nullopt, now); });
  }
}

void Cluster::set_backup_rank(const std::string& id, uint32_t rank, const std::string& volume) {
  turn(member(id), [&](Scheduler& s, Clock now) { s.set_backup_rank(volume, rank, now); });
}

OccurrenceId Cluster::start_entry(const Entry& e, const std::string& master) {
  const auto* timer = std::get_if<schedule::Timer>(&e.timing);
  if (timer == nullptr || timer->kind != schedule::TimerKind::at) throw HarnessError("start_entry takes a one-shot");
  make_master(master);
  put_entry(e);
  return occ_of(e, timer->at_utc_ms);
}

std::optional<std::string> Cluster::store_value(const std::string& id, const std::string& key) const {
  const Member& m = member(id);
  auto it = m.store.find({kVolume, key});
  if (it == m.store.end()) return std::nullopt;
  return it->second.value;
}

namespace detail {
// The occurrence records of one kind ("m/" owner, "w/" worker) in a node's store, by suffix.
template <class R, class Store, class Decode>
std::map<std::string, R> records_of(const Store& store, const OccurrenceId& occ, const std::string& kind,
                                    Decode decode) {
  std::map<std::string, R> out;
  const std::string prefix = schedule::occ_prefix(occ) + kind;
  for (const auto& [k, rec] : store) {
    if (k.first != kVolume || k.second.rfind(prefix, 0) != 0) continue;
    auto r = decode(rec.value);
    if (!r.ok()) throw HarnessError("undecodable record " + k.second);
    out[k.second.substr(prefix.size())] = *r;
  }
  return out;
}
}  // namespace detail

std::map<std::string, OwnerRecord> Cluster::owner_records(const std::string& id, const OccurrenceId& occ) const {
  return detail::records_of<OwnerRecord>(member(id).store, occ, "m/",
                                         [](std::string_view b) { return schedule::decode_owner_record(b); });
}

std::map<std::string, WorkerRecord> Cluster::worker_records(const std::string& id,
                                                                   const OccurrenceId& occ) const {
  return detail::records_of<WorkerRecord>(member(id).store, occ, "w/",
                                          [](std::string_view b) { return schedule::decode_worker_record(b); });
}

std::optional<Vote> Cluster::vote(const std::string& id, const OccurrenceId& occ, bool durable_only) const {
  const Member& m = member(id);
  const auto& records = durable_only ? m.disk_local : m.local;
  auto it = records.find(schedule::grant_key(kVolume, occ));
  if (it == records.end()) return std::nullopt;
  auto v = schedule::decode_vote(it->second);
  if (!v.ok()) throw HarnessError("undecodable vote");
  return *v;
}

// One turn for everything copied, as an anti-entropy session's records reach the Node's
// pump together (and the scheduler decides on them as a batch: Scheduler::settle).
void Cluster::resync(const std::string& id) {
  Member& m = member(id);
  turn(m, [&](Scheduler&, Clock) {
    for (const auto& o : ids_) {
      if (o == id || !up(o)) continue;
      for (const auto& [k, rec] : member(o).store) {
        auto it = m.store.find(k);
        if (it != m.store.end() && it->second.version >= rec.version) continue;
        m.store[k] = rec;
        m.batch.push_back(Member::Op{false, false, k.first, k.second, rec});
        ++m.written;
        m.echoes.push_back(Member::Echo{k.first, k.second, live(rec)});
      }
    }
  });
}

// --- runs and events -----------------------------------------------------------------------------

std::vector<Run> Cluster::runs_of(const OccurrenceId& occ) const {
  std::vector<Run> out;
  for (const auto& r : runs_) {
    if (schedule::entry_key(r.inv.entity, r.inv.entry) == occ.entry_key && r.inv.scheduled_utc_ms == occ.scheduled_utc_ms) {
      out.push_back(r);
    }
  }
  return out;
}

size_t Cluster::complete(const std::string& id, bool ok) {
  Member& m = member(id);
  if (!m.up) return 0;
  std::vector<uint64_t> ids;
  for (const auto& [inv, index] : m.running) ids.push_back(inv);
  for (uint64_t inv : ids) {
    Run& r = runs_[m.running[inv]];
    r.finished = true;
    r.ok = ok;
    m.running.erase(inv);
    turn(m, [&](Scheduler& s, Clock now) { s.on_invocation_done(schedule::InvocationResult{inv, ok, "done"}, now); });
  }
  return ids.size();
}

size_t Cluster::finish_stopped(const std::string& id) {
  Member& m = member(id);
  if (!m.up) return 0;
  std::vector<uint64_t> ids;
  for (const auto& [inv, index] : m.running) {
    if (runs_[index].stop_requested) ids.push_back(inv);
  }
  for (uint64_t inv : ids) {
    Run& r = runs_[m.running[inv]];
    r.finished = true;
    r.replaced = true;
    m.running.erase(inv);
    schedule::InvocationResult result{inv, false, "stopped"};
    result.replaced = true;
    turn(m, [&](Scheduler& s, Clock now) { s.on_invocation_done(result, now); });
  }
  return ids.size();
}

std::map<std::pair<std::string, int64_t>, size_t> Cluster::duplicate_runs() const {
  std::map<std::pair<std::string, int64_t>, size_t> count;
  for (const auto& r : runs_) ++count[{schedule::entry_key(r.inv.entity, r.inv.entry), r.inv.scheduled_utc_ms}];
  std::erase_if(count, [](const auto& kv) { return kv.second < 2; });
  return count;
}

std::vector<LoggedEvent> Cluster::events(FireEvent::Kind kind, const OccurrenceId& occ,
                                                const std::string& node) const {
  std::vector<LoggedEvent> out;
  for (const auto& e : events_) {
    if (e.ev.kind == kind && e.ev.occ == occ && (node == "*" || e.node == node)) out.push_back(e);
  }
  return out;
}

std::string Cluster::dump() const {
  std::ostringstream s;
  for (const auto& p : log_) s << p.describe() << "\n";
  for (const auto& e : events_) {
    s << "event t=" << e.t << " " << e.node << " " << schedule::to_string(e.ev.kind) << " attempt=" << e.ev.attempt
      << " node=" << e.ev.node << " " << e.ev.detail << "\n";
  }
  return s.str();
}

// --- entries -------------------------------------------------------------------------------------

Entry one_shot(const std::string& name, int64_t at_utc, Semantics semantics) {
  Entry e;
  e.entity = "e";
  e.name = name;
  schedule::Timer t;
  t.kind = schedule::TimerKind::at;
  t.at_utc_ms = at_utc;
  e.timing = t;
  e.handler = "log";
  e.semantics = semantics;
  e.origin = "n1";
  e.created_utc_ms = kBaseUtc + kStartT;
  return e;
}

Entry at_most_once_on(const std::string& origin, const std::string& name, int64_t at_utc) {
  Entry e = one_shot(name, at_utc, Semantics::at_most_once);
  e.origin = origin;
  e.prefer_origin = true;
  e.accept_timeout_ms = 2'000;
  return e;
}

Entry every(const std::string& name, int64_t interval_ms, uint64_t count, Semantics semantics) {
  Entry e = one_shot(name, 0, semantics);
  schedule::Timer t;
  t.kind = schedule::TimerKind::interval;
  t.interval_ms = interval_ms;
  t.count = count;
  e.timing = t;
  return e;
}

OccurrenceId occ_of(const Entry& e, int64_t scheduled_utc) {
  return OccurrenceId{schedule::entry_key(e), scheduled_utc};
}

std::vector<ClaimReply> replies(const Cluster& c, const std::string& from, const std::string& to,
                                       const OccurrenceId& occ) {
  std::vector<ClaimReply> out;
  for (const auto& p : c.sent(from, to, is<ClaimReply>())) {
    if (p.as<ClaimReply>()->occ == occ) out.push_back(*p.as<ClaimReply>());
  }
  return out;
}

}  // namespace caesium::firing_test
