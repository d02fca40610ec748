// Runtime, part 1: start-up, the drain of the core's outputs, the deadline timer,
// invocations and static entries.  Shutdown, signals and reload: runtime_shutdown.cpp.
#include "node/daemon/runtime/runtime.h"

#include <sodium.h>
#include <sys/stat.h>
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "node/daemon/api/api_backend.h"
#include "node/daemon/api/api_server.h"
#include "node/daemon/api/chronos.h"
#include "node/daemon/exec/chronos_executor.h"
#include "node/daemon/exec/executor.h"
#include "node/daemon/storage/lmdb_storage.h"
#include "node/daemon/net/net.h"
#include "node/daemon/net/net_addr.h"
#include "schedule/entry_json.h"

namespace caesium::daemon {
namespace {

// The longest the loop sleeps without asking the core: a realtime clock step (NTP,
// an operator) is noticed within this, even when the next deadline is far away.
constexpr int64_t kMaxTimerWaitMs = 1'000;

bool same_definition(schedule::Entry a, schedule::Entry b) {
  // Who created an entry and when (and when it was last resumed) are the server's; they
  // do not make it different.
  a.origin = b.origin;
  a.created_utc_ms = b.created_utc_ms;
  a.resumed_utc_ms = b.resumed_utc_ms;
  return a == b;
}

}  // namespace

Result<wire::Keyring> read_key_file(const std::string& path, std::string* warning) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error("cannot read the key file " + path + " (create one with `caesium keygen --out " + path + "`)");
  if (warning != nullptr && (st.st_mode & 077) != 0) {
    *warning = "key file " + path + " is readable by group or others; run `chmod 600 " + path + "`";
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Error("cannot read the key file " + path);
  auto ring = wire::Keyring::parse(text.str());
  if (!ring) return Error("key file " + path + ": " + ring.error().message);
  return std::move(*ring);
}

Runtime::Runtime(uv_loop_s* loop, DaemonConfig config, RuntimeOptions options)
    : loop_(loop),
      config_(std::move(config)),
      options_(std::move(options)),
      logger_(config_.node_id, options_.log_level.value_or(config_.log_level), options_.log_sink) {}

Result<std::unique_ptr<Runtime>> Runtime::start(uv_loop_s* loop, DaemonConfig config, RuntimeOptions options) {
  if (sodium_init() < 0) return Error("libsodium failed to initialise");
  std::unique_ptr<Runtime> rt(new Runtime(loop, std::move(config), std::move(options)));
  std::string warning;
  auto keyring = read_key_file(rt->config_.key_file, &warning);
  if (!keyring) return keyring.error();
  if (!warning.empty()) rt->logger_.warn(warning);
  if (Status s = rt->open(*keyring); !s.ok()) {
    rt->abandon();
    return s.error();
  }
  if (rt->options_.install_signal_handlers) rt->install_signals();
  return rt;
}

Status Runtime::open(const wire::Keyring& keyring) {
  const DaemonConfig& c = config_;
  Transport::Callbacks tcb;
  tcb.on_datagram = [this](const std::string& from, std::string_view bytes) {
    node_->on_datagram(from, bytes, now());
    request_drain();
  };
  tcb.on_frame = [this](const std::string& from, std::string_view frame) {
    node_->on_stream(from, frame, now());
    request_drain();
  };
  tcb.log = [this](LogLevel level, const std::string& m) { logger_.log(level, m); };
  transport_ = std::make_unique<Transport>(loop_, c.transport, std::move(tcb));
  if (Status s = transport_->listen(c.gossip_listen, c.stream_listen); !s.ok()) return s;

  LmdbOptions lo;
  lo.initial_map_bytes = c.storage.map_bytes;
  lo.max_map_bytes = c.storage.max_map_bytes;
  auto env = LmdbEnv::open(c.data_dir, lo);
  if (!env) return env.error();
  auto records = (*env)->load_all();
  if (!records) return records.error();

  uint64_t seed = 0;
  randombytes_buf(&seed, sizeof seed);
  node::NodeOptions no = node_options(c, keyring);
  no.first_start = options_.first_start;
  node_ = std::make_unique<node::Node>(std::move(no), seed);
  node_->set_fire_observer([this](const schedule::FireEvent& f) { on_fire_event(f); });
  if (Status s = node_->start(*records, now()); !s.ok()) {
    return Error("cannot start node " + c.node_id + " from " + c.data_dir + ": " + s.error().message);
  }
  // The last step that can fail; storage and timers come after it (see abandon()).
  if (Status s = open_api(); !s.ok()) return s;
  storage_ = std::make_unique<LmdbStorage>(
      loop_, std::move(*env),
      [this](uint64_t seq) {
        node_->on_durable(seq, now());
        request_drain();
      },
      [this](const std::string& m) { logger_.error("storage: " + m); }, c.group_commit_max_delay_ms);
  handlers_ = std::make_unique<HandlerSet>(loop_, c.node_id, c.handlers,
                                           [this](LogLevel level, const std::string& m) { logger_.log(level, m); });
  chronos_ = make_chronos_executor(loop_);

  timer_ = new uv_timer_t();
  uv_timer_init(loop_, timer_);
  timer_->data = this;
  // Inputs (frames, datagrams, durability, finished handlers) mark the core's outputs
  // as pending; they are drained once per loop iteration, after every callback of its
  // I/O phase, so what one read of a socket produces leaves as one frame per peer and
  // one storage batch instead of one per input.  The check phase comes before the loop
  // blocks again, so nothing waits longer than the iteration it was produced in.
  check_ = new uv_check_t();
  uv_check_init(loop_, check_);
  check_->data = this;
  uv_check_start(check_, [](uv_check_t* h) {
    auto* self = static_cast<Runtime*>(h->data);
    if (self->drain_pending_) self->drain();
    self->logger_.flush();
  });
  // Log lines are collected and written once per iteration (log.h): in the check phase
  // above for what the I/O phase logged, and here, just before the poll may block, for
  // what timers and closing handles logged.
  prepare_ = new uv_prepare_t();
  uv_prepare_init(loop_, prepare_);
  prepare_->data = this;
  uv_prepare_start(prepare_, [](uv_prepare_t* h) { static_cast<Runtime*>(h->data)->logger_.flush(); });
  // An input that arrives outside the I/O phase (a handler finishing from a timer
  // callback, say) would otherwise wait in the poll phase until the next event: while
  // a drain is pending, an active idle handle makes that poll return at once.
  idle_ = new uv_idle_t();
  uv_idle_init(loop_, idle_);
  idle_->data = this;
  member_states_[c.node_id] = gossip::MemberState::kAlive;  // our own load updates are routine

  logger_.info("started: cluster " + c.cluster_name + ", gossip " + c.gossip_listen + " (udp), stream " +
               c.stream_listen + " (tcp), data " + c.data_dir + " (" + std::to_string(records->size()) +
               " records), config epoch " + std::to_string(node_->config().epoch) + ", " +
               std::to_string(c.handlers.size()) + " handlers, " + std::to_string(c.entries.size()) +
               " static entries");
  log_amnesia();
  create_static_entries();
  drain();
  return Status::success();
}

// What an empty data directory means for the votes (docs/firing.md, Amnesia), said once at
// start: an operator who wiped a node, or forgot --first-start on a new one, sees why
// at-most-once work waits.
void Runtime::log_amnesia() {
  if (!node_->started_empty()) {
    if (options_.first_start) logger_.warn("--first-start ignored: the data directory already holds this node's records");
    return;
  }
  if (node_->amnesia_horizon_utc_ms() == 0) {
    logger_.info("first start (--first-start): an empty data directory of a node that never ran; it votes at once");
    return;
  }
  logger_.info("empty data directory: a new or wiped node abstains on occurrences due up to " +
               format_rfc3339_utc(node_->amnesia_horizon_utc_ms() + config_.tuning.scheduler.prepare_ahead_ms) +
               " (it may have voted on them in a previous life; --first-start for a node that never ran)");
}

Status Runtime::open_api() {
  const ApiConfig& a = config_.api;
  auto hp = parse_host_port(a.listen, true);
  if (!hp || hp->port == 0) return Status::success();  // no API
  ApiServerOptions o;
  auto tokens = load_api_tokens(a.token_file, a.tokens_file);
  if (!tokens) return tokens.error();
  if (tokens->empty()) {
    logger_.warn("neither api.token_file nor api.tokens_file is set: the API at " + a.listen +
                 " refuses every authenticated request");
  }
  o.api.tokens = std::move(*tokens);
  o.api.chronos_requires_token = a.chronos_requires_token;
  o.api.metrics_requires_token = a.metrics_requires_token;
  o.http.max_connections = a.max_connections;
  o.http.max_connections_per_client = a.max_connections_per_client;
  if (!a.tls_cert.empty()) {
    auto tls = TlsContext::server(TlsFiles{a.tls_cert, a.tls_key, a.tls_ca, a.tls_verify_client});
    if (!tls) return Error("api.tls_cert: " + tls.error().message, "api.tls_cert");
    o.http.tls = std::move(*tls);
    o.forward_scheme = "https";
    o.forward_ca_file = a.tls_ca;
    o.forward_cert_file = a.tls_cert;
    o.forward_key_file = a.tls_key;
  } else if (!is_loopback_host(hp->host)) {
    logger_.warn("the API at " + a.listen + " speaks plain HTTP beyond loopback: tokens cross the network in "
                 "clear; set api.tls_cert and api.tls_key");
  }
  o.api.chronos_volume = a.chronos_volume;
  o.http.limits.max_body_bytes = a.max_body_bytes;
  NodeApiBackend::Hooks hooks;
  hooks.now = [this] { return now(); };
  hooks.after_write = [this] { drain(); };
  hooks.metrics_text = [this] { return metrics_text(); };
  hooks.random64 = [] {
    uint64_t r = 0;
    randombytes_buf(&r, sizeof r);
    return r;
  };
  api_backend_ = std::make_unique<NodeApiBackend>(*node_, std::move(hooks));
  api_ = std::make_unique<ApiServer>(loop_, std::move(o), *api_backend_);
  if (Status s = api_->listen(a.listen); !s.ok()) {
    return Error("cannot listen on the API address " + a.listen + ": " + s.error().message);
  }
  logger_.info(std::string("API on ") + (a.tls_cert.empty() ? "http://" : "https://") + api_->address() + " (" +
               std::to_string(api_->token_count()) + " tokens)");
  return Status::success();
}

std::string Runtime::api_address() const { return api_ ? api_->address() : std::string(); }

std::string Runtime::metrics_text() const {
  const DaemonMetrics daemon = metrics();
  MetricsInputs in;
  in.node = node_.get();
  in.fire = &fire_metrics_;
  in.daemon = &daemon;
  HttpServerStats http;
  if (api_) {
    http = api_->http_stats();
    in.api = &api_->counters();
    in.http = &http;
  }
  return render_metrics(in);
}

Clock Runtime::now() const {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  Clock c;
  c.mono_ms = static_cast<int64_t>(uv_hrtime() / 1'000'000);
  c.utc_ms = static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
  return c;
}

void Runtime::create_static_entries() {
  const Clock t = now();
  for (const auto& se : config_.entries) {
    if (!node_->is_replica(se.volume)) {
      logger_.debug("static entry " + se.volume + "/" + se.entity + "/" + se.name +
                    ": this node is not a replica of the volume; a replica creates it");
      continue;
    }
    const nlohmann::json doc = nlohmann::json::parse(se.json, nullptr, false);
    auto entry = schedule::entry_from_json(doc, se.entity, se.name, t.utc_ms, config_.node_id);
    if (!entry) {  // validated when the config was loaded
      logger_.error("static entry " + se.entity + "/" + se.name + ": " + entry.error().message);
      continue;
    }
    auto existing = node_->get_entry(se.volume, se.entity, se.name);
    // A pause or resume given through the API outlives a restart: the config decides it
    // only when it says `paused` itself.
    if (existing && !(doc.is_object() && doc.contains("paused"))) entry->paused = existing->paused;
    if (existing) entry->triggers = existing->triggers;  // the server's, as for a PUT
    if (existing && same_definition(*existing, *entry)) continue;
    auto ack = node_->put_entry(se.volume, *entry, t);
    if (!ack) {
      logger_.error("static entry " + se.volume + "/" + se.entity + "/" + se.name + ": " + ack.error().message);
      continue;
    }
    logger_.info(std::string(existing ? "updated" : "created") + " static entry " + se.volume + "/" + se.entity +
                 "/" + se.name);
  }
}

void Runtime::request_drain() {
  drain_pending_ = true;
  // Starting an active idle handle is a no-op; a closing one must not be restarted.
  if (idle_ != nullptr && phase_ != Phase::kClosing && phase_ != Phase::kStopped) {
    uv_idle_start(idle_, [](uv_idle_t*) {});
  }
}

void Runtime::drain() {
  // While closing, the transport refuses sends and the executors are gone: the core's
  // last outputs are dropped, as they would be by a crash at this point.
  if (!node_ || phase_ == Phase::kClosing || phase_ == Phase::kStopped) return;
  if (draining_) {
    drain_again_ = true;  // a callback fired inside the drain; the outer loop repeats
    return;
  }
  draining_ = true;
  drain_pending_ = false;
  if (idle_ != nullptr) uv_idle_stop(idle_);  // drain() returned above once closing began
  ++metrics_.loop_turns;
  do {
    drain_again_ = false;
    while (!finished_.empty()) {
      node::InvocationResult r = std::move(finished_.front());
      finished_.pop_front();
      node_->on_invocation_done(r, now());
    }
    node::Transmit t;
    while (node_->poll_transmit(t)) {
      if (t.channel == node::Channel::kDatagram) {
        transport_->send_datagram(t.to_addr, std::move(t.bytes));
      } else {
        transport_->send_frame(t.to_addr, std::move(t.bytes));
      }
    }
    std::string restarted;
    while (node_->poll_reconnect(restarted)) transport_->reconnect_now(restarted);
    node::StorageBatch batch;
    while (node_->poll_storage(batch)) storage_->submit(std::move(batch));
    node::Invocation inv;
    while (node_->poll_invocation(inv)) run_invocation(std::move(inv));
    uint64_t stop = 0;
    while (node_->poll_cancel(stop)) {
      if (handlers_) handlers_->stop(stop);  // overlap = replace (Chronos timers have no policy)
    }
    node::NodeEvent e;
    while (node_->poll_event(e)) log_event(e);
  } while (drain_again_ || !finished_.empty());
  draining_ = false;
  rearm_timer();
}

void Runtime::on_fire_event(const schedule::FireEvent& f) {
  fire_metrics_.on_fire(f);
  // Most fire events are debug lines: not worth formatting when debug is off.
  if (logger_.enabled(fire_level(f))) logger_.line(describe_fire(f));
}

void Runtime::log_event(const node::NodeEvent& e) {
  // Fire events come through on_fire_event (the Node's fire observer), not the queue.
  if (e.kind == node::NodeEvent::Kind::kFire) return on_fire_event(e.fire);
  EventLine line = describe_event(e);
  if (e.kind == node::NodeEvent::Kind::kMember) {
    // Incarnation bumps that only carry new load or meta are routine: debug.
    auto [it, fresh] = member_states_.try_emplace(e.subject, e.state);
    if (!fresh && it->second == e.state) line.level = LogLevel::kDebug;
    it->second = e.state;
  }
  logger_.line(line);
}

void Runtime::run_invocation(node::Invocation inv) {
  ++metrics_.invocations_started;
  const uint64_t id = inv.id;
  auto done = [this, id](const node::InvocationResult& result) {
    ++metrics_.invocations_finished;
    if (!result.ok) ++metrics_.invocations_failed;
    node::InvocationResult r = result;
    r.id = id;
    finished_.push_back(std::move(r));
    request_drain();
  };
  if (inv.handler == kChronosHandler) {
    chronos_->run(inv, std::move(done));
  } else {
    handlers_->run(inv, std::move(done));
  }
}

size_t Runtime::running_invocations() const {
  return (handlers_ ? handlers_->running() : 0) + (chronos_ ? chronos_->running() : 0);
}

void Runtime::rearm_timer() {
  if (timer_ == nullptr || phase_ == Phase::kClosing || phase_ == Phase::kStopped) return;
  const int64_t deadline = node_->next_deadline_mono();
  const int64_t now_mono = now().mono_ms;
  int64_t wait = deadline == kNever ? kMaxTimerWaitMs : deadline - now_mono;
  // From inside the timer's own callback a 0 ms timer is due again in the same timer
  // phase (libuv 1.44 runs due timers until none is left), so a core with work due at
  // once (a backlog of due occurrences handled a slice per tick) would never let the loop
  // read a socket: gossip would starve and peers would suspect us.  1 ms lets each
  // iteration poll I/O between slices.
  wait = std::clamp<int64_t>(wait, in_timer_ ? 1 : 0, kMaxTimerWaitMs);
  uv_timer_start(timer_, [](uv_timer_t* t) { static_cast<Runtime*>(t->data)->on_timer(); },
                 static_cast<uint64_t>(wait), 0);
}

void Runtime::on_timer() {
  in_timer_ = true;
  node_->on_tick(now());
  drain();
  in_timer_ = false;
}

DaemonMetrics Runtime::metrics() const {
  DaemonMetrics m = metrics_;
  if (storage_) m.storage = storage_->metrics();
  if (transport_) m.transport = transport_->metrics();
  return m;
}

}  // namespace caesium::daemon
