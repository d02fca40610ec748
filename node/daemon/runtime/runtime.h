// The daemon runtime: one Node core bound to the world on a libuv loop — the UDP/TCP
// transport, LMDB storage with group commit, handler executors, the log, signals.
//
// The binding is the one the simulator uses (sim/node_process.cpp), with real clocks:
//   inputs   datagrams and frames from the transport, one timer re-armed to the core's
//            next deadline (capped at 1 s so a realtime clock step is noticed),
//            durability notifications from storage, finished invocations;
//   outputs  after every input the runtime drains everything the core produced:
//            transmits -> transport, storage batches -> LMDB (committed as one group per
//            loop iteration, off the loop thread), invocations -> HandlerSet, events ->
//            log lines.  Promises (grants, acceptances, API acks) are held by the core
//            until storage reports their batch durable.
// Clocks: monotonic ms from uv_hrtime, realtime ms from CLOCK_REALTIME, read once per
// input.
//
// The HTTP API (node/daemon/api/api_server.h) listens on api.listen unless its port is 0;
// invocations of the built-in handler "chronos" (Chronos /timers pops) go to the
// Chronos executor, every other one to the configured HandlerSet.
//
// Shutdown (SIGTERM/SIGINT or shutdown()): the node leaves the cluster gracefully, keeps
// serving while running invocations finish (at most shutdown_grace, then they are
// cancelled), lingers until the leave has been gossiped and queued frames are written
// (bounded), flushes storage, closes every handle and reports exit status 0.  A second
// SIGINT/SIGTERM exits at once (status 130).  SIGHUP reloads handlers and the log level
// from the config file; a config that does not load is logged and ignored.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "node/core/node.h"
#include "node/daemon/config/config.h"
#include "node/daemon/runtime/log.h"
#include "node/daemon/metrics/metrics.h"
#include "node/daemon/metrics/runtime_metrics.h"

struct uv_loop_s;
struct uv_timer_s;
struct uv_signal_s;
struct uv_check_s;
struct uv_idle_s;
struct uv_prepare_s;

namespace caesium::daemon {

class ApiServer;
class Executor;
class HandlerSet;
class LmdbStorage;
class NodeApiBackend;
class Transport;

struct RuntimeOptions {
  Logger::Sink log_sink;                   // default: stderr
  std::optional<LogLevel> log_level;       // overrides the config (and survives SIGHUP)
  bool install_signal_handlers = false;    // SIGTERM, SIGINT, SIGHUP
  bool first_start = false;                // caesium node --first-start (node::NodeOptions::first_start)
};

class Runtime {
 public:
  // Reads the key file, binds the sockets, opens and loads the data directory, starts
  // the Node core and creates the config's static entries.  Nothing runs until the
  // loop does.  An Error says what failed (the CLI prints it and exits with status 2).
  static Result<std::unique_ptr<Runtime>> start(uv_loop_s* loop, DaemonConfig config, RuntimeOptions options = {});
  // REQUIRES: stopped() (the loop ran the shutdown to its end) or the loop never ran.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Begins the graceful shutdown (idempotent).  `on_stopped(status)` runs on the loop
  // thread when every handle is closed; the loop then has nothing left to run.
  void shutdown();
  void set_on_stopped(std::function<void(int status)> fn) { on_stopped_ = std::move(fn); }
  bool stopped() const { return phase_ == Phase::kStopped; }
  bool shutting_down() const { return phase_ != Phase::kRunning; }

  // SIGHUP's work: handlers and log level from `fresh`; everything else needs a restart.
  void reload(const DaemonConfig& fresh);

  node::Node& node() { return *node_; }
  const node::Node& node() const { return *node_; }
  const DaemonConfig& config() const { return config_; }
  Logger& logger() { return logger_; }
  // A snapshot: the daemon's own counters plus storage and transport.
  DaemonMetrics metrics() const;
  // The Prometheus page GET /metrics serves (node, fire events, daemon, API).
  std::string metrics_text() const;
  // "host:port" the API listens on ("" without an API).
  std::string api_address() const;
  Clock now() const;

  // Runs the core's pending outputs (after an API call into node(), for example).
  void drain();
  // Drained in this loop iteration's check phase (see check_ and idle_).
  void request_drain();

 private:
  enum class Phase : uint8_t { kRunning, kLeaving, kClosing, kStopped };

  Runtime(uv_loop_s* loop, DaemonConfig config, RuntimeOptions options);
  Status open(const wire::Keyring& keyring);
  Status open_api();
  // SIGHUP's part for the API: tokens and the TLS certificate.  Returns what to add to
  // the reload's log line; names what needs a restart in `ignored`.
  std::string reload_api(const ApiConfig& fresh, std::vector<std::string>& ignored);
  void create_static_entries();
  void log_amnesia();
  void run_invocation(node::Invocation inv);
  size_t running_invocations() const;
  void log_event(const node::NodeEvent& e);
  void on_fire_event(const schedule::FireEvent& f);
  void rearm_timer();
  void on_timer();
  void install_signals();
  void on_signal(int signum);
  void on_shutdown_check();
  void close_all();
  void handle_closed();
  // After a failed start: hands the transport to its own close callback.
  void abandon();

  uv_loop_s* loop_;
  DaemonConfig config_;
  RuntimeOptions options_;
  Logger logger_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<LmdbStorage> storage_;
  std::unique_ptr<HandlerSet> handlers_;
  std::unique_ptr<Executor> chronos_;  // the built-in "chronos" handler (Chronos /timers pops)
  std::unique_ptr<NodeApiBackend> api_backend_;
  std::unique_ptr<ApiServer> api_;
  FireMetrics fire_metrics_;

  uv_timer_s* timer_ = nullptr;           // the core's next deadline
  uv_timer_s* shutdown_timer_ = nullptr;  // shutdown progress checks
  uv_check_s* check_ = nullptr;           // drains pending outputs once per loop iteration
  uv_idle_s* idle_ = nullptr;             // active while a drain is pending: the poll does not block
  uv_prepare_s* prepare_ = nullptr;       // writes the log lines collected before the poll blocks
  std::vector<uv_signal_s*> signals_;

  std::map<std::string, gossip::MemberState> member_states_;  // last logged state per member
  std::deque<node::InvocationResult> finished_;  // handler results not yet given to the core
  bool draining_ = false;
  bool drain_again_ = false;
  bool drain_pending_ = false;  // an input arrived since the last drain (see check_)

  Phase phase_ = Phase::kRunning;
  bool in_timer_ = false;  // inside on_timer (see rearm_timer)
  int64_t leave_mono_ms_ = 0;
  int64_t idle_since_mono_ms_ = -1;  // shutdown: when no invocation was running any more
  bool cancelled_ = false;
  int signals_seen_ = 0;
  int closing_parts_ = 0;
  std::function<void(int)> on_stopped_;
  DaemonMetrics metrics_;
};

// Reads and checks a key file: an Error when it cannot be read or parsed; `warning` is
// set when the file is readable by group or others.
Result<wire::Keyring> read_key_file(const std::string& path, std::string* warning);

}  // namespace caesium::daemon
