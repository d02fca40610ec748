// The harness (tests/unit/firing_harness.h), part 1: the network and time.  Part 2
// (firing_harness_state.cpp): configuration and views, processes, records, runs and
// events, entries.  Compiled once, with the build's optimisation, into
// caesium_firing_harness, which the firing_* unit tests link.

#include "tests/unit/firing_harness_internal.h"

namespace caesium::firing_test {

const char* kind_name(const Packet& p) {
  if (p.as<StorePush>()) return "push";
  static constexpr const char* names[] = {"claim",  "claim_reply", "release", "dispatch", "dispatch_reply",
                                          "revoke", "revoke_reply", "go",      "go_ask",   "go_answer"};
  static_assert(std::size(names) == std::variant_size_v<FireMessage>, "a name for every fire message");
  return names[std::get<FireMessage>(p.body).index()];
}

std::string Packet::describe() const {
  std::ostringstream s;
  s << "#" << id << " t=" << sent_t << " " << from << "->" << to << " " << kind_name(*this);
  if (const auto* c = as<Claim>()) {
    s << " kind=" << int(c->kind) << " round=" << c->round << " attempt=" << c->attempt.attempt << " fid="
      << c->attempt.fire_id << " worker=" << c->attempt.worker;
  } else if (const auto* r = as<ClaimReply>()) {
    s << " outcome=" << int(r->outcome) << " holder=" << r->holder.node << " kind=" << int(r->kind)
      << " round=" << r->round << " promised=" << r->promised_round;
    if (r->has_accepted) s << " accepted=" << r->accepted.fire_id << "@" << r->accepted_round;
  } else if (const auto* d = as<Dispatch>()) {
    s << " fid=" << d->fire_id << " attempt=" << d->attempt << " dup=" << d->possible_duplicate;
  } else if (const auto* dr = as<DispatchReply>()) {
    s << " fid=" << dr->fire_id << " outcome=" << int(dr->outcome) << " " << dr->reason;
  } else if (const auto* rv = as<Revoke>()) {
    s << " fid=" << rv->fire_id;
  } else if (const auto* rr = as<RevokeReply>()) {
    s << " fid=" << rr->fire_id << " outcome=" << int(rr->outcome);
  } else if (const auto* ask = as<GoAsk>()) {
    for (const auto& item : ask->items) s << " " << item.fire_id << "@" << item.run_at_utc_ms;
  } else if (const auto* answer = as<GoAnswer>()) {
    for (const auto& item : answer->items) s << " " << item.fire_id << "=" << int(item.verdict);
  } else if (const auto* p = as<StorePush>()) {
    s << " " << p->key << (p->lazy ? " (lazy)" : "");
  }
  if (dropped) s << " DROPPED";
  return s.str();
}

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)), rng_(options_.seed) {
  Topology topology;
  topology.epoch = 1;
  auto& volume = topology.volumes[kVolume];
  for (size_t i = 1; i <= options_.nodes; ++i) ids_.push_back("n" + std::to_string(i));
  volume.replicas = ids_;
  std::sort(volume.replicas.begin(), volume.replicas.end());
  for (size_t i = 0; i < ids_.size(); ++i) {
    auto m = std::make_unique<Member>();
    m->id = ids_[i];
    m->index = i;
    m->topology = topology;
    members_[ids_[i]] = std::move(m);
  }
  // A new cluster's disks are empty: every node starts as a wiped one does.
  for (const auto& id : ids_) start(member(id), Disk::kWipe, true);
}

Cluster::~Cluster() = default;

Cluster::Member* Cluster::find(const std::string& id) {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.get();
}
const Cluster::Member* Cluster::find(const std::string& id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.get();
}
Cluster::Member& Cluster::member(const std::string& id) {
  if (Member* m = find(id)) return *m;
  throw HarnessError("no node " + id);
}
const Cluster::Member& Cluster::member(const std::string& id) const {
  if (const Member* m = find(id)) return *m;
  throw HarnessError("no node " + id);
}
Scheduler& Cluster::sched(const std::string& id) {
  Member& m = member(id);
  if (!m.up) throw HarnessError(id + " is down");
  return *m.sched;
}
bool Cluster::up(const std::string& id) const { return member(id).up; }
uint64_t Cluster::boot(const std::string& id) const { return member(id).boot; }
Clock Cluster::clock(const std::string& id) const { return Clock{t_, kBaseUtc + t_ + member(id).skew_ms}; }
int64_t Cluster::t_at(const std::string& id, int64_t utc) const { return utc - kBaseUtc - member(id).skew_ms; }

void Cluster::set_skew(const std::string& id, int64_t skew_ms) { member(id).skew_ms = skew_ms; }
Topology Cluster::topology(const std::string& id) const { return member(id).topology; }
void Cluster::set_auto_flush(const std::string& id, bool on) { member(id).auto_flush = on; }
size_t Cluster::unflushed(const std::string& id) const { return member(id).batch.size(); }
int64_t Cluster::amnesia_horizon(const std::string& id) const { return member(id).horizon_utc; }

// --- turns: one input to one scheduler, then what it caused on that node (Cluster::turn is in
// firing_harness_internal.h) ---------------------------------------------------------------

void Cluster::check_steps(int64_t& steps, const char* where) const {
  if (++steps > options_.max_steps) {
    throw HarnessError(std::string("no quiet after ") + std::to_string(options_.max_steps) + " steps in " + where +
                       " at t=" + std::to_string(t_));
  }
}

// The Node's pump: store echoes to the scheduler, the batch to disk (auto flush), released
// sends and starts out, messages to itself back in, until nothing moves.
void Cluster::settle(Member& m) {
  int64_t steps = 0;
  for (bool progress = true; progress && m.up;) {
    check_steps(steps, "settle");
    progress = false;
    if (!m.echoes.empty()) {
      while (!m.echoes.empty()) {
        Member::Echo e = std::move(m.echoes.front());
        m.echoes.pop_front();
        m.sched->on_record(e.volume, e.key, e.value, clock(m.id));
      }
      m.sched->settle(clock(m.id));  // as the Node does: a batch of records, then decisions
      progress = true;
    }
    if (m.auto_flush && !m.batch.empty()) {
      for (auto& op : m.batch) {
        if (op.local && op.erase) m.disk_local.erase(op.key);
        else if (op.local) m.disk_local[op.key] = op.rec.value;
        else m.disk_store[{op.volume, op.key}] = op.rec;
      }
      m.batch.clear();
      m.durable = m.written;
    }
    release(m);
    while (!m.self.empty()) {
      FireMessage msg = std::move(m.self.front());
      m.self.pop_front();
      m.sched->on_message(m.id, msg, clock(m.id));
      progress = true;
    }
  }
  if (m.up) m.sched->check_invariants();  // asserts in debug builds
}

void Cluster::release(Member& m) {
  while (!m.outbox.empty() && m.outbox.front().barrier <= m.durable) {
    Member::Out out = std::move(m.outbox.front());
    m.outbox.pop_front();
    if (auto* inv = std::get_if<Invocation>(&out.what)) {
      const Clock now = clock(m.id);
      m.running[inv->id] = runs_.size();
      runs_.push_back(Run{m.id, m.boot, std::move(*inv), now.mono_ms, now.utc_ms});
    } else if (out.to == m.id) {
      // Logged like any packet (sent_t = ready_t = now) but never in flight: the Node loops it back.
      log_.push_back(Packet{next_packet_++, m.id, m.id, std::get<FireMessage>(out.what), t_, t_});
      m.self.push_back(std::move(std::get<FireMessage>(out.what)));
    } else {
      transmit(m, out.to, std::move(std::get<FireMessage>(out.what)), t_ + options_.latency_ms);
    }
  }
}

void Cluster::flush(const std::string& id) {
  Member& m = member(id);
  const bool was = m.auto_flush;
  m.auto_flush = true;
  if (m.up) settle(m);
  m.auto_flush = was;
}

void Cluster::write(Member& m, const std::string& volume, const std::string& key, std::string value, bool lazy,
                           bool push) {
  Record rec{std::move(value), next_version_++};
  m.store[{volume, key}] = rec;
  m.batch.push_back(Member::Op{false, false, volume, key, rec});
  ++m.written;
  m.echoes.push_back(Member::Echo{volume, key, live(rec)});
  if (!push) return;
  const auto& v = m.topology.volumes[volume];
  std::set<std::string> to(v.replicas.begin(), v.replicas.end());
  to.insert(v.previous_replicas.begin(), v.previous_replicas.end());
  for (const auto& n : to) {
    if (n == m.id) continue;
    transmit(m, n, StorePush{volume, key, rec, lazy}, t_ + options_.latency_ms + (lazy ? options_.lazy_push_hold_ms : 0));
  }
}

// --- the network ---------------------------------------------------------------------------------

bool Cluster::matches_rule(const Packet& p, int action) const {
  for (const auto& r : rules_) {
    if (r.action == action && (r.from == "*" || r.from == p.from) && (r.to == "*" || r.to == p.to) && r.what(p)) {
      return true;
    }
  }
  return false;
}

void Cluster::transmit(Member& m, const std::string& to, std::variant<FireMessage, StorePush> body,
                              int64_t ready_t) {
  Packet p{next_packet_++, m.id, to, std::move(body), t_, ready_t};
  p.dropped = matches_rule(p, 0);
  log_.push_back(p);
  if (!p.dropped) net_.push_back(std::move(p));
}

void Cluster::deliver_packet(Packet p) {
  Member* m = find(p.to);
  if (m == nullptr || !m->up || matches_rule(p, 0)) return;  // nobody there, or cut since it left
  if (const auto* push = p.as<StorePush>()) {
    turn(*m, [&](Scheduler&, Clock) {
      auto it = m->store.find({push->volume, push->key});
      if (it != m->store.end() && it->second.version >= push->rec.version) return;  // has it, or newer
      m->store[{push->volume, push->key}] = push->rec;
      m->batch.push_back(Member::Op{false, false, push->volume, push->key, push->rec});
      ++m->written;
      m->echoes.push_back(Member::Echo{push->volume, push->key, live(push->rec)});
    });
    return;
  }
  turn(*m, [&](Scheduler& s, Clock now) { s.on_message(p.from, std::get<FireMessage>(p.body), now); });
}

bool Cluster::pop_ready(bool honour_time, Packet& out) {
  for (auto it = net_.begin(); it != net_.end(); ++it) {
    if ((honour_time && it->ready_t > t_) || matches_rule(*it, 1)) continue;
    out = std::move(*it);
    net_.erase(it);
    return true;
  }
  return false;
}

size_t Cluster::deliver_all() {
  size_t n = 0;
  int64_t steps = 0;
  for (Packet p; pop_ready(false, p);) {
    check_steps(steps, "deliver_all");
    deliver_packet(std::move(p));
    ++n;
  }
  return n;
}

size_t Cluster::deliver(const std::string& from, const std::string& to, const Filter& what) {
  std::vector<Packet> picked;
  for (auto it = net_.begin(); it != net_.end();) {
    if ((from == "*" || it->from == from) && (to == "*" || it->to == to) && what(*it)) {
      picked.push_back(std::move(*it));
      it = net_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& p : picked) deliver_packet(std::move(p));
  return picked.size();
}

size_t Cluster::drop(const std::string& from, const std::string& to, const Filter& what) {
  const size_t before = net_.size();
  std::erase_if(net_, [&](const Packet& p) {
    return (from == "*" || p.from == from) && (to == "*" || p.to == to) && what(p);
  });
  return before - net_.size();
}

void Cluster::delay(const std::string& from, const std::string& to, const Filter& what, int64_t ms) {
  for (auto& p : net_) {
    if ((from == "*" || p.from == from) && (to == "*" || p.to == to) && what(p)) p.ready_t += ms;
  }
}

std::vector<Packet> Cluster::in_flight(const std::string& from, const std::string& to, const Filter& what) const {
  std::vector<Packet> out;
  for (const auto& p : net_) {
    if ((from == "*" || p.from == from) && (to == "*" || p.to == to) && what(p)) out.push_back(p);
  }
  return out;
}

std::vector<Packet> Cluster::sent(const std::string& from, const std::string& to, const Filter& what) const {
  std::vector<Packet> out;
  for (const auto& p : log_) {
    if ((from == "*" || p.from == from) && (to == "*" || p.to == to) && what(p)) out.push_back(p);
  }
  return out;
}

void Cluster::inject(const std::string& from, const std::string& to, FireMessage msg) {
  transmit(member(from), to, std::move(msg), t_);
}
void Cluster::cut(const std::string& from, const std::string& to, Filter what) {
  rules_.push_back(Rule{from, to, std::move(what), 0});
}
void Cluster::hold(const std::string& from, const std::string& to, Filter what) {
  rules_.push_back(Rule{from, to, std::move(what), 1});
}
void Cluster::heal() { rules_.clear(); }
void Cluster::unhold() {
  std::erase_if(rules_, [](const Rule& r) { return r.action == 1; });
}

// --- time ----------------------------------------------------------------------------------------

void Cluster::progress(int64_t ms, bool network) {
  if (ms < 0) throw HarnessError("time does not go back");
  const int64_t end = t_ + ms;
  int64_t steps = 0;
  for (;;) {
    check_steps(steps, network ? "run_for" : "advance");
    if (network) {
      for (Packet p; pop_ready(true, p);) {
        check_steps(steps, "run_for (delivery)");
        deliver_packet(std::move(p));
      }
    }
    int64_t next = kNever;
    for (const auto& id : ids_) {
      const Member& m = member(id);
      if (m.up) next = std::min(next, m.sched->next_deadline_mono());
    }
    if (network) {
      for (const auto& p : net_) {
        if (!matches_rule(p, 1)) next = std::min(next, p.ready_t);
      }
    }
    if (next > end) break;
    t_ = std::max(t_, next);
    for (const auto& id : ids_) {
      Member& m = member(id);
      if (m.up && m.sched->next_deadline_mono() <= t_) turn(m, [](Scheduler& s, Clock now) { s.on_tick(now); });
    }
  }
  t_ = end;
}

void Cluster::advance(int64_t ms) { progress(ms, false); }
void Cluster::run_for(int64_t ms) { progress(ms, true); }

}  // namespace caesium::firing_test
