// World: construction, the event loop, processes, disks, handlers, faults, figures.
// The network half (send / deliver / connections) is in world_net.cpp.
#include "sim/world.h"

#include "base/hash.h"
#include "base/time.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iterator>
#include <utility>

namespace caesium::sim {

const char* fault_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::kCrash: return "crash";
    case FaultKind::kRestart: return "restart";
    case FaultKind::kLeave: return "leave";
    case FaultKind::kStopped: return "stopped";
    case FaultKind::kPartition: return "partition";
    case FaultKind::kCut: return "cut";
    case FaultKind::kOneway: return "oneway";
    case FaultKind::kHeal: return "heal";
    case FaultKind::kSkew: return "skew";
    case FaultKind::kSlow: return "slow";
    case FaultKind::kSlowEnd: return "slow_end";
    case FaultKind::kConfig: return "config";
  }
  return "?";
}

namespace {
const toml::table& empty_table() {
  static const toml::table t;
  return t;
}
}  // namespace

World::World(ClusterSpec cluster, WorldOptions options, ProcessFactory factory)
    : cluster_(std::move(cluster)),
      options_(std::move(options)),
      factory_(std::move(factory)),
      node_options_(options_.node_options),
      nodes_(cluster_.nodes.size()),
      addresses_(cluster_),
      links_(cluster_.nodes.size()) {
  Rng root(options_.seed);
  net_rng_ = root.fork();
  disk_rng_ = root.fork();
  handler_rng_ = root.fork();
  process_seed_rng_ = root.fork();
  Rng clock_rng = root.fork();
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    // Monotonic clocks start somewhere between 1 s and ~11.6 days, like uptime.
    nodes_[i].mono_base_ms = clock_rng.between(kMsPerSecond, 1'000'000'000);
  }
  mix(options_.seed);
}

World::~World() = default;

int64_t World::index_of(const std::string& id) const {
  return AddressBook::find(addresses_.by_id, id);
}

bool World::is_slow(uint32_t node) const {
  const SimNode& n = nodes_[node];
  return n.slow_delay_ms > 0 && now_ms_ < n.slow_until_ms;
}

node::Clock World::clock_of(uint32_t node) const {
  const SimNode& n = nodes_[node];
  const double drifted = n.drift * static_cast<double>(now_ms_ - n.drift_since_ms);
  int64_t skew = n.skew_offset_ms + std::llround(drifted);
  skew = std::clamp(skew, -options_.max_skew_ms, options_.max_skew_ms);
  return node::Clock{now_ms_ + n.mono_base_ms, options_.epoch_utc_ms + now_ms_ + skew};
}

void World::trace(const std::string& line) {
  if (trace_sink_) trace_sink_(format_duration_ms(now_ms_) + " " + line);
}

void World::start() {
  assert(!started_);
  started_ = true;
  // Every process starts before any output is drained, so checkers see a cluster that
  // is all up when the first observation arrives.
  for (uint32_t i = 0; i < nodes_.size(); ++i) start_process(i, false);
  if (cluster_.start_joined) {
    std::vector<gossip::Alive> everyone;
    for (const SimNode& n : nodes_) {
      if (auto a = n.process->self_alive()) everyone.push_back(std::move(*a));
    }
    for (uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].process->adopt_members(everyone, clock_of(i));
  }
  for (Checker* c : checkers_) c->on_start(*this);
  for (uint32_t i = 0; i < nodes_.size(); ++i) drain(i);
}

void World::at(int64_t time_ms, std::function<void()> action) {
  assert(time_ms >= now_ms_);
  Event e;
  e.kind = EventKind::kAction;
  e.time_ms = time_ms;
  e.slot = actions_.put(std::move(action));
  queue_.push(e);
}

void World::run_until(int64_t time_ms) {
  if (livelocked_) return;
  while (!queue_.empty() && queue_.top().time_ms <= time_ms) {
    Event e = queue_.pop();
    assert(e.time_ms >= now_ms_);
    if (e.time_ms > now_ms_) {
      instant_events_ = 0;
      instant_by_node_.clear();
      instant_by_kind_.clear();
    }
    now_ms_ = e.time_ms;
    ++events_;
    dispatch(e);
    if (check_livelock(e)) return;
  }
  now_ms_ = std::max(now_ms_, time_ms);
}

bool World::check_livelock(const Event& e) {
  ++instant_events_;
  if (instant_events_ > options_.livelock_events_per_instant / 2) {
    ++instant_by_node_[e.node];
    ++instant_by_kind_[e.kind];
  }
  if (instant_events_ > options_.livelock_events_per_instant) {
    stop_livelocked(std::to_string(instant_events_) + " events at t=" + format_duration_ms(now_ms_) +
                    " without virtual time advancing");
  } else if (queue_.size() > options_.livelock_queue_events) {
    stop_livelocked("the agenda holds " + std::to_string(queue_.size()) + " events at t=" +
                    format_duration_ms(now_ms_) + " (" + std::to_string(events_) + " run)");
  } else if (options_.max_events > 0 && events_ > options_.max_events) {
    stop_livelocked(std::to_string(events_) + " events at t=" + format_duration_ms(now_ms_) +
                    ", above the run's cap of " + std::to_string(options_.max_events));
  }
  return livelocked_;
}

void World::stop_livelocked(const std::string& why) {
  static const char* const kKindNames[] = {"datagram", "stream", "tick", "sync", "invocation", "action", "connect"};
  static_assert(std::size(kKindNames) == static_cast<size_t>(EventKind::kConnect) + 1, "a name per event kind");
  std::string detail = "livelock: " + why;
  if (!instant_by_node_.empty()) {
    // The busiest nodes and kinds in the second half of the instant: where to look.
    std::vector<std::pair<uint64_t, uint32_t>> nodes;
    for (const auto& [node, count] : instant_by_node_) nodes.emplace_back(count, node);
    std::sort(nodes.rbegin(), nodes.rend());
    detail += "; latest events by node:";
    for (size_t i = 0; i < nodes.size() && i < 3; ++i) {
      const uint32_t node = nodes[i].second;
      detail += " " + (node < nodes_.size() ? spec(node).id : "?") + "=" + std::to_string(nodes[i].first);
    }
    detail += "; by kind:";
    for (const auto& [kind, count] : instant_by_kind_) {
      detail += std::string(" ") + kKindNames[static_cast<size_t>(kind)] + "=" + std::to_string(count);
    }
  }
  violate({"livelock", detail, now_ms_, {}});
  livelocked_ = true;
  queue_ = EventQueue{};  // frees what piled up; nothing more runs
}

void World::dispatch(Event& e) {
  switch (e.kind) {
    case EventKind::kDatagram:
    case EventKind::kStream:
      deliver(e);
      break;
    case EventKind::kTick:
      on_tick_event(e);
      break;
    case EventKind::kSyncDone:
      on_sync_done(e);
      break;
    case EventKind::kInvocationDone:
      on_invocation_done(e);
      break;
    case EventKind::kConnect:
      on_connect_event(e);
      break;
    case EventKind::kAction: {
      mix(0xAC710 ^ static_cast<uint64_t>(now_ms_));
      auto action = actions_.take(e.slot);
      action();
      break;
    }
  }
}

// A slow node processes inbound work late: postpone by the delay while slow, and after
// that until the backlog has drained, so nothing overtakes what was postponed.
bool World::defer_if_slow(Event& e) {
  SimNode& n = nodes_[e.node];
  if (e.deferred) return false;
  if (e.kind == EventKind::kTick && n.slow_inbound_only) return false;
  int64_t target = -1;
  if (n.slow_delay_ms > 0 && now_ms_ < n.slow_until_ms) {
    target = now_ms_ + n.slow_delay_ms;
  } else if (now_ms_ < n.backlog_until_ms) {
    target = n.backlog_until_ms;
  }
  if (target < 0) return false;
  target = std::max(target, n.backlog_until_ms);
  n.backlog_until_ms = target;
  e.time_ms = target;
  e.deferred = true;
  queue_.push(e);
  return true;
}

// --- Processes ----------------------------------------------------------------------------

void World::start_process(uint32_t node, bool drain_now) {
  SimNode& n = nodes_[node];
  assert(!n.up);
  ProcessContext ctx;
  ctx.cluster = &cluster_;
  ctx.self = node;
  ctx.seed = process_seed_rng_.next_u64();
  ctx.incarnation = n.incarnation++;
  ctx.node_options = node_options_ ? node_options_.get() : &empty_table();
  ctx.addresses = &addresses_;
  n.process = factory_(ctx);
  assert(n.process != nullptr);
  n.up = true;
  n.leaving = false;
  ++n.generation;
  n.busy_count = 0;
  n.busy_reported = false;
  n.tick_at_ms = kNever;
  n.tick_deferred = false;
  n.backlog_until_ms = 0;
  n.up_since_ms = now_ms_;
  record_status(node);
  auto records = n.disk.load_all();
  mix(0x57A27 ^ node);
  mix(n.disk.record_count());
  trace(spec(node).id + " start with " + std::to_string(n.disk.record_count()) + " records");
  n.process->start(std::move(records.value()), clock_of(node));
  if (drain_now) drain(node);
}

// Destroys the process; the disk keeps only what was durable.  In-flight invocations, syncs and ticks of this generation are
// recognised as stale by their generation and dropped when they come due.
void World::stop_process(uint32_t node) {
  SimNode& n = nodes_[node];
  if (!n.up) return;
  batches_lost_ += n.disk.crash();  // unsynced writes are lost (none after a flush)
  n.process.reset();
  n.up = false;
  n.leaving = false;
  n.up_total_ms += now_ms_ - n.up_since_ms;
  ++n.generation;
  n.tick_at_ms = kNever;
  n.tick_deferred = false;
  ++n.tick_token;
  for (auto& ex : executions_) {
    if (ex.node == node && ex.outcome == Execution::Outcome::kRunning) {
      ex.outcome = Execution::Outcome::kAbandoned;
    }
  }
  // Its own connections and queues vanish with the process; the others' connections to
  // it break, and they back off.
  for (uint64_t key : connection_keys([node](uint32_t src, uint32_t dst) { return src == node || dst == node; })) {
    Connection& conn = connections_.at(key);
    const auto src = static_cast<uint32_t>(key >> 32);
    if (src == node) {
      conn = Connection{conn.epoch + 1, 0, Connection::State::kIdle, conn.token + 1, 0, 0, {}, 0};
    } else {
      break_connection(src, node, conn);
    }
  }
  record_status(node);
}

void World::drain(uint32_t node) {
  SimNode& n = nodes_[node];
  if (!n.up) return;
  Process& p = *n.process;
  node::Transmit tx;
  while (p.poll_transmit(tx)) send(node, tx);
  node::StorageBatch batch;
  while (p.poll_storage(batch)) submit_storage(node, batch);
  // Group commit: everything this input produced goes into one sync (if none is running).
  if (n.disk.wants_sync()) start_sync(node);
  node::Invocation inv;
  while (p.poll_invocation(inv)) execute(node, inv);
  uint64_t stop = 0;
  while (p.poll_cancel(stop)) stop_execution(node, stop);
  Observation obs;
  while (p.poll_observation(obs)) observe(node, obs);
  std::string addr;
  while (n.up && p.poll_reconnect(addr)) reconnect_now(node, addr);
  schedule_tick(node, false);
}

void World::schedule_tick(uint32_t node, bool after_tick) {
  SimNode& n = nodes_[node];
  const int64_t deadline = n.process->next_deadline_mono();
  if (deadline == kNever) {
    n.tick_at_ms = kNever;
    n.tick_deferred = false;
    ++n.tick_token;
    n.busy_count = 0;
    return;
  }
  int64_t t = deadline - n.mono_base_ms;
  if (after_tick) {
    if (t <= now_ms_) {
      if (++n.busy_count > options_.busy_loop_limit) {
        if (!n.busy_reported) {
          n.busy_reported = true;
          violate({"busy_loop",
                   "the process asked for a deadline <= now " +
                       std::to_string(n.busy_count) + " times in a row after on_tick",
                   now_ms_, spec(node).id});
        }
        t = now_ms_ + 1;
      }
    } else {
      n.busy_count = 0;
    }
  }
  t = std::max(t, now_ms_);
  if (t == n.tick_at_ms) return;
  // A tick postponed by slowness stays put when the deadline is still due by then:
  // rescheduling it would postpone it again and again.
  if (n.tick_deferred && t <= n.tick_at_ms) return;
  n.tick_deferred = false;
  n.tick_at_ms = t;
  Event e;
  e.kind = EventKind::kTick;
  e.time_ms = t;
  e.node = node;
  e.generation = n.generation;
  e.a = ++n.tick_token;
  queue_.push(e);
}

void World::on_tick_event(Event& e) {
  SimNode& n = nodes_[e.node];
  if (!n.up || e.generation != n.generation || e.a != n.tick_token) return;
  if (defer_if_slow(e)) {
    n.tick_at_ms = e.time_ms;
    n.tick_deferred = true;
    return;
  }
  n.tick_at_ms = kNever;
  n.tick_deferred = false;
  ++ticks_;
  mix(0x71C4 ^ e.node);
  n.process->on_tick(clock_of(e.node));
  drain(e.node);
  if (n.up) schedule_tick(e.node, true);
}

// --- Disks ---------------------------------------------------------------------------------

void World::submit_storage(uint32_t node, node::StorageBatch& batch) {
  SimNode& n = nodes_[node];
  mix(0xD15C ^ batch.seq);
  mix(batch.ops.size());
  Status st = n.disk.submit_checked(std::move(batch));
  batch = node::StorageBatch{};
  if (!st.ok()) {
    violate({"storage_seq", st.error().message, now_ms_, spec(node).id});
  }
}

void World::start_sync(uint32_t node) {
  SimNode& n = nodes_[node];
  Event e;
  e.kind = EventKind::kSyncDone;
  e.node = node;
  e.generation = n.generation;
  e.a = n.disk.begin_sync();
  e.time_ms = now_ms_ + options_.disk_sync.sample(disk_rng_);
  queue_.push(e);
}

void World::on_sync_done(const Event& e) {
  SimNode& n = nodes_[e.node];
  if (!n.up || e.generation != n.generation) return;
  if (!n.disk.complete_sync(e.a)) return;
  ++syncs_;
  mix(0x5F9C ^ e.a);
  n.process->on_durable(e.a, clock_of(e.node));
  drain(e.node);  // starts the next sync if batches are waiting
}

// --- Handler executions ----------------------------------------------------------------------

void World::execute(uint32_t node, node::Invocation& invocation) {
  const SimNode& n = nodes_[node];
  Execution ex;
  ex.start_ms = now_ms_;
  ex.start_utc_ms = clock_of(node).utc_ms;
  ex.node = node;
  ex.generation = n.generation;
  ex.invocation = std::move(invocation);
  invocation = node::Invocation{};
  mix(0x1A7C ^ node);
  mix(hash64(ex.invocation.fire_id));
  mix(static_cast<uint64_t>(ex.invocation.scheduled_utc_ms));
  trace(spec(node).id + " invoke " + ex.invocation.volume + "/" + ex.invocation.entity + "/" +
        ex.invocation.entry + " fire " + ex.invocation.fire_id);
  const HandlerModel& h = options_.handler;
  const bool hang = handler_rng_.chance(h.never_complete_probability);
  bool fail = handler_rng_.chance(h.fail_probability);
  double duration = static_cast<double>(h.duration.sample(handler_rng_));
  if (auto fixed = h.fixed_duration_ms.find(ex.invocation.handler); fixed != h.fixed_duration_ms.end()) {
    duration = static_cast<double>(fixed->second);
  }
  if (auto flaky = h.fail_by_handler.find(ex.invocation.handler); flaky != h.fail_by_handler.end()) {
    const uint64_t draw = hash_combine(hash64(ex.invocation.fire_id), options_.seed) % 1'000'000;
    fail = static_cast<double>(draw) < flaky->second * 1'000'000.0;
  }
  if (node < h.slowness.size()) duration *= h.slowness[node];
  // The entry's timeout stops a run that would last longer, a hung one included.
  const int64_t timeout_ms = ex.invocation.timeout_ms;
  const bool timed_out = timeout_ms > 0 && (hang || duration > static_cast<double>(timeout_ms));
  const bool hung = hang && !timed_out;
  if (hung) ex.outcome = Execution::Outcome::kHung;
  executions_.push_back(std::move(ex));
  const Execution& stored = executions_.back();
  for (Checker* c : checkers_) c->on_execution(*this, stored);
  if (hung) return;
  Event e;
  e.kind = EventKind::kInvocationDone;
  e.node = node;
  e.generation = n.generation;
  e.a = executions_.size() - 1;
  e.aux = timed_out ? 2 : fail ? 0 : 1;
  e.time_ms = now_ms_ + (timed_out ? timeout_ms : std::llround(duration));
  queue_.push(e);
}

// A stop (SIGTERM, an aborted request) takes a moment to end the run.
constexpr int64_t kStopDelayMs = 50;

void World::stop_execution(uint32_t node, uint64_t invocation_id) {
  const SimNode& n = nodes_[node];
  for (size_t i = executions_.size(); i-- > 0;) {
    const Execution& ex = executions_[i];
    if (ex.node != node || ex.generation != n.generation || ex.invocation.id != invocation_id) continue;
    if (ex.outcome != Execution::Outcome::kRunning && ex.outcome != Execution::Outcome::kHung) return;  // ended
    trace(spec(node).id + " stop fire " + ex.invocation.fire_id);
    mix(0x5709 ^ i);
    Event e;
    e.kind = EventKind::kInvocationDone;
    e.node = node;
    e.generation = n.generation;
    e.a = i;
    e.aux = 3;  // stopped: replaced
    e.time_ms = now_ms_ + kStopDelayMs;
    queue_.push(e);
    return;
  }
}

void World::on_invocation_done(const Event& e) {
  SimNode& n = nodes_[e.node];
  if (!n.up || e.generation != n.generation) return;  // crashed first: abandoned
  Execution& ex = executions_[e.a];
  if (ex.done_ms >= 0) return;  // stopped before its natural end, or ended before the stop
  ex.outcome = e.aux == 3   ? Execution::Outcome::kReplaced
               : e.aux == 2 ? Execution::Outcome::kTimedOut
               : e.aux      ? Execution::Outcome::kOk
                            : Execution::Outcome::kFailed;
  ex.done_ms = now_ms_;
  mix(0xD0E ^ e.a);
  for (Checker* c : checkers_) c->on_execution_done(*this, ex);
  node::InvocationResult result;
  result.id = ex.invocation.id;
  result.ok = e.aux == 1;
  result.timed_out = e.aux == 2;
  result.replaced = e.aux == 3;
  result.detail = result.ok          ? "ok"
                  : result.timed_out ? "stopped at its timeout"
                  : result.replaced  ? "stopped: replaced by a later occurrence"
                                     : "simulated handler failure";
  n.process->on_invocation_done(result, clock_of(e.node));
  drain(e.node);
}

// --- Observations ------------------------------------------------------------------------------

void World::observe(uint32_t node, const Observation& obs) {
  ++observations_;
  mix(0x0B5 ^ static_cast<uint64_t>(obs.kind));
  mix(hash64(obs.subject));
  mix(static_cast<uint64_t>(obs.state));
  if (trace_sink_) {
    switch (obs.kind) {
      case Observation::Kind::kFire:
        trace(spec(node).id + " fire " + obs.text + " " + obs.volume + "/" + obs.key + "@" +
              format_rfc3339_utc(obs.scheduled_utc_ms) + (obs.subject.empty() ? "" : " node=" + obs.subject) +
              (obs.detail.empty() ? "" : " (" + obs.detail + ")"));
        break;
      case Observation::Kind::kMaster:
        trace(spec(node).id + " master of " + obs.volume + " is " + (obs.subject.empty() ? "-" : obs.subject));
        break;
      case Observation::Kind::kEntry:
        trace(spec(node).id + " entry " + obs.volume + "/" + obs.key + " created at " + format_rfc3339_utc(obs.at_utc_ms));
        break;
      case Observation::Kind::kConfigAdopted:
      case Observation::Kind::kConfigResult:
      case Observation::Kind::kWriteAcked:
        break;  // traced below
      default:
        trace(spec(node).id + " observes " + obs.subject + " state " + std::to_string(obs.state) +
              (obs.text.empty() ? "" : " " + obs.text));
        break;
    }
  }
  if (obs.kind == Observation::Kind::kConfigAdopted || obs.kind == Observation::Kind::kConfigResult) {
    observe_config(node, obs);
  }
  if (obs.kind == Observation::Kind::kWriteAcked && obs.write_id >= 1 && obs.write_id <= writes_.size()) {
    WriteRecord& w = writes_[obs.write_id - 1];
    if (w.acked_ms < 0 && w.node == node) {
      w.acked_ms = now_ms_;
      trace(spec(node).id + " write " + std::to_string(w.id) + " acknowledged");
    }
  }
  for (Checker* c : checkers_) c->on_observation(*this, node, obs);
}

void World::violate(Violation v) {
  mix(hash64(v.invariant));
  trace("VIOLATION " + v.invariant + ": " + v.detail);
  violations_.push_back(std::move(v));
}

}  // namespace caesium::sim
