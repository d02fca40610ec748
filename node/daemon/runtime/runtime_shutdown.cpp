// Runtime, part 2: signals, the graceful shutdown, reload, and closing every handle.
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "node/daemon/api/api_backend.h"
#include "node/daemon/api/api_server.h"
#include "node/daemon/exec/executor.h"
#include "node/daemon/storage/lmdb_storage.h"
#include "node/daemon/net/net.h"
#include "node/daemon/runtime/runtime.h"

namespace caesium::daemon {
namespace {

constexpr uint64_t kShutdownCheckMs = 50;
constexpr int64_t kMinLeaveLingerMs = 500;  // let the leave be gossiped before the socket closes
constexpr int64_t kFlushTimeoutMs = 2'000;  // queued frames to unreachable peers are given up

}  // namespace

Runtime::~Runtime() {
  if (phase_ == Phase::kStopped || timer_ == nullptr) return;
  // Misuse (e.g. a test that failed before shutting down): close now, running the loop
  // until our handles are closed so that no callback outlives this object.
  on_stopped_ = nullptr;
  if (phase_ != Phase::kClosing) close_all();
  while (phase_ != Phase::kStopped) uv_run(loop_, UV_RUN_ONCE);
}

void Runtime::abandon() {
  // Only the transport can be open after a failed start (storage and timers come after
  // the last step that can fail).  It deletes itself once its handles are closed.
  assert(!storage_);
  assert(timer_ == nullptr);
  api_.reset();  // its handles finish closing on later loop turns by themselves
  api_backend_.reset();
  if (transport_) {
    Transport* t = transport_.release();
    t->close([t] { delete t; });
  }
  phase_ = Phase::kStopped;
}

void Runtime::on_signal(int signum) {
  if (signum == SIGHUP) {
    auto fresh = load_config(config_.path);
    if (!fresh) {
      logger_.error("SIGHUP: the config does not load, keeping the running one: " + fresh.error().message);
      return;
    }
    reload(*fresh);
    return;
  }
  ++signals_seen_;
  if (signals_seen_ == 1) {
    logger_.info(std::string(signum == SIGINT ? "SIGINT" : "SIGTERM") +
                 ": leaving the cluster (send it again to exit at once)");
    shutdown();
    return;
  }
  logger_.warn("second signal: exiting at once (committed state is safe; running handlers are killed)");
  // Handler processes run in sessions of their own: kill them rather than leave orphans.
  if (handlers_) handlers_->cancel_all();
  if (chronos_) chronos_->cancel_all();
  std::_Exit(130);
}

void Runtime::shutdown() {
  if (phase_ != Phase::kRunning || timer_ == nullptr) return;
  phase_ = Phase::kLeaving;
  const Clock t = now();
  leave_mono_ms_ = t.mono_ms;
  logger_.info("leaving: " + std::to_string(running_invocations()) + " invocations running, grace " +
               format_duration_ms(config_.shutdown_grace_ms));
  node_->leave(t);
  drain();
  shutdown_timer_ = new uv_timer_t();
  uv_timer_init(loop_, shutdown_timer_);
  shutdown_timer_->data = this;
  uv_timer_start(shutdown_timer_, [](uv_timer_t* h) { static_cast<Runtime*>(h->data)->on_shutdown_check(); },
                 kShutdownCheckMs, kShutdownCheckMs);
}

// The node keeps serving while it leaves: finished invocations are recorded and pushed,
// frames keep flowing.  It closes once nothing runs (or the grace period is over), the
// leave has had time to spread, and storage and the send queues are empty (bounded).
void Runtime::on_shutdown_check() {
  if (phase_ != Phase::kLeaving) return;
  const int64_t now_mono = now().mono_ms;
  const int64_t elapsed = now_mono - leave_mono_ms_;
  const size_t running = running_invocations();
  if (running > 0) {
    if (elapsed < config_.shutdown_grace_ms) return;
    logger_.warn("shutdown grace of " + format_duration_ms(config_.shutdown_grace_ms) + " is over: cancelling " +
                 std::to_string(running) + " running invocations");
    handlers_->cancel_all();
    chronos_->cancel_all();
    cancelled_ = true;
  }
  if (idle_since_mono_ms_ < 0) idle_since_mono_ms_ = now_mono;
  const int64_t linger = std::max<int64_t>(kMinLeaveLingerMs, 2 * config_.tuning.membership.gossip_interval_ms);
  if (elapsed < linger) return;
  const bool flushed = storage_->idle() && transport_->pending_bytes() == 0;
  if (!flushed && now_mono - idle_since_mono_ms_ < kFlushTimeoutMs) return;
  if (!flushed) {
    logger_.warn("giving up " + std::to_string(transport_->pending_bytes()) + " bytes of frames to unreachable peers");
  }
  close_all();
}

void Runtime::close_all() {
  phase_ = Phase::kClosing;
  if (api_) {
    api_->close();
    api_.reset();  // its handles finish closing on later loop turns by themselves
  }
  if (handlers_) {
    handlers_->cancel_all();
    handlers_.reset();
  }
  if (chronos_) {
    chronos_->cancel_all();
    chronos_.reset();
  }
  finished_.clear();
  auto close_handle = [this](void* h) {
    ++closing_parts_;
    uv_close(static_cast<uv_handle_t*>(h), [](uv_handle_t* handle) {
      auto* self = static_cast<Runtime*>(handle->data);
      if (handle->type == UV_TIMER) {
        delete reinterpret_cast<uv_timer_t*>(handle);
      } else if (handle->type == UV_CHECK) {
        delete reinterpret_cast<uv_check_t*>(handle);
      } else if (handle->type == UV_IDLE) {
        delete reinterpret_cast<uv_idle_t*>(handle);
      } else if (handle->type == UV_PREPARE) {
        delete reinterpret_cast<uv_prepare_t*>(handle);
      } else {
        delete reinterpret_cast<uv_signal_t*>(handle);
      }
      self->handle_closed();
    });
  };
  ++closing_parts_;  // held until everything below has been asked to close
  if (timer_ != nullptr) close_handle(timer_);
  if (shutdown_timer_ != nullptr) close_handle(shutdown_timer_);
  if (check_ != nullptr) close_handle(check_);
  if (idle_ != nullptr) close_handle(idle_);
  if (prepare_ != nullptr) close_handle(prepare_);
  for (auto* s : signals_) close_handle(s);
  signals_.clear();
  if (transport_) {
    ++closing_parts_;
    transport_->close([this] { handle_closed(); });
  }
  if (storage_) {
    ++closing_parts_;
    storage_->close([this] { handle_closed(); });
  }
  handle_closed();
}

void Runtime::handle_closed() {
  assert(closing_parts_ > 0);
  if (--closing_parts_ > 0) return;
  timer_ = nullptr;
  shutdown_timer_ = nullptr;
  check_ = nullptr;
  idle_ = nullptr;
  prepare_ = nullptr;
  phase_ = Phase::kStopped;
  const auto& st = storage_ ? storage_->metrics() : StorageMetrics{};
  logger_.info("stopped: durable seq " + std::to_string(storage_ ? storage_->durable_seq() : 0) + ", " +
               std::to_string(st.commits) + " commits" + (cancelled_ ? ", running invocations were cancelled" : ""));
  logger_.flush();
  if (on_stopped_) on_stopped_(0);
}

void Runtime::reload(const DaemonConfig& fresh) {
  if (phase_ != Phase::kRunning) return;
  handlers_->reload(fresh.handlers);
  config_.handlers = fresh.handlers;
  node_->set_handler_caps(handler_caps(fresh.handlers));
  std::string level_note;
  if (!options_.log_level) {
    logger_.set_level(fresh.log_level);
    config_.log_level = fresh.log_level;
  } else {
    level_note = " (log level fixed by --log-level)";
  }
  std::vector<std::string> ignored;
  if (fresh.node_id != config_.node_id) ignored.push_back("node_id");
  if (fresh.cluster_name != config_.cluster_name) ignored.push_back("cluster_name");
  if (fresh.data_dir != config_.data_dir) ignored.push_back("data_dir");
  if (fresh.key_file != config_.key_file) ignored.push_back("key_file");
  if (fresh.gossip_listen != config_.gossip_listen || fresh.stream_listen != config_.stream_listen ||
      fresh.gossip_advertise != config_.gossip_advertise || fresh.stream_advertise != config_.stream_advertise) {
    ignored.push_back("addresses");
  }
  if (fresh.seeds != config_.seeds) ignored.push_back("seeds");
  if (!(fresh.initial_cluster == config_.initial_cluster)) ignored.push_back("cluster");
  bool entries_changed = fresh.entries.size() != config_.entries.size();
  for (size_t i = 0; !entries_changed && i < fresh.entries.size(); ++i) {
    const auto &a = fresh.entries[i], &b = config_.entries[i];
    entries_changed = a.volume != b.volume || a.entity != b.entity || a.name != b.name || a.json != b.json;
  }
  if (entries_changed) ignored.push_back("entries");
  const std::string api_note = reload_api(fresh.api, ignored);
  std::string msg = "SIGHUP: reloaded " + std::to_string(fresh.handlers.size()) + " handlers and log level " +
                    std::string(to_string(logger_.level())) + level_note + api_note;
  if (!ignored.empty()) {
    msg += "; changes to";
    for (const auto& f : ignored) msg += " " + f;
    msg += " take effect at the next restart";
  }
  logger_.info(msg);
}

std::string Runtime::reload_api(const ApiConfig& fresh, std::vector<std::string>& ignored) {
  const ApiConfig& now = config_.api;
  if (fresh.listen != now.listen || fresh.max_body_bytes != now.max_body_bytes ||
      fresh.chronos_volume != now.chronos_volume || fresh.max_connections != now.max_connections ||
      fresh.max_connections_per_client != now.max_connections_per_client ||
      fresh.chronos_requires_token != now.chronos_requires_token ||
      fresh.metrics_requires_token != now.metrics_requires_token || fresh.tls_cert.empty() != now.tls_cert.empty() ||
      fresh.tls_verify_client != now.tls_verify_client) {
    ignored.push_back("api");
  }
  if (!api_) return "";
  std::string note;
  // Tokens and certificates are what an operator rotates: a bad file keeps the old ones
  // (and says so) rather than lock everyone out or stop the API.
  if (auto tokens = load_api_tokens(fresh.token_file, fresh.tokens_file)) {
    note += ", " + std::to_string(tokens->size()) + " API tokens";
    api_->set_tokens("", std::move(*tokens));
    config_.api.token_file = fresh.token_file;
    config_.api.tokens_file = fresh.tokens_file;
  } else {
    logger_.error("SIGHUP: the API tokens were not reloaded, the previous ones stay: " + tokens.error().message);
  }
  if (!fresh.tls_cert.empty() && !now.tls_cert.empty() && fresh.tls_verify_client == now.tls_verify_client) {
    auto tls = TlsContext::server(TlsFiles{fresh.tls_cert, fresh.tls_key, fresh.tls_ca, fresh.tls_verify_client});
    if (tls) {
      api_->set_tls(std::move(*tls));
      config_.api.tls_cert = fresh.tls_cert;
      config_.api.tls_key = fresh.tls_key;
      config_.api.tls_ca = fresh.tls_ca;
      note += " and the TLS certificate (for new connections)";
    } else {
      logger_.error("SIGHUP: the API's TLS certificate was not reloaded, the previous one stays: " +
                    tls.error().message);
    }
  }
  return note;
}

void Runtime::install_signals() {
  for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
    auto* s = new uv_signal_t();
    uv_signal_init(loop_, s);
    s->data = this;
    uv_signal_start(s, [](uv_signal_t* h, int sig) { static_cast<Runtime*>(h->data)->on_signal(sig); }, signum);
    // Signal watchers alone do not keep the loop running.
    uv_unref(reinterpret_cast<uv_handle_t*>(s));
    signals_.push_back(s);
  }
}

}  // namespace caesium::daemon
