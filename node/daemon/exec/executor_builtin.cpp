// The builtin executors: "noop" and "log".  Both answer at once, but through the
// loop (DeferredQueue), so `done` is never called from inside run().
#include "base/time.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/exec/handler_invocation.h"
#include "node/daemon/runtime/deferred_queue.h"

namespace caesium::daemon {

namespace {

constexpr size_t kLoggedPayloadBytes = 200;

std::string log_line(const std::string& handler, const node::Invocation& inv) {
  std::string payload = inv.payload.substr(0, kLoggedPayloadBytes);
  std::string line = "handler " + handler + ": fire_id=" + printable_text(inv.fire_id) +
                     " volume=" + printable_text(inv.volume) +
                     " entity=" + printable_text(inv.entity) + " entry=" + printable_text(inv.entry) +
                     " scheduled=" + format_rfc3339_utc(inv.scheduled_utc_ms) +
                     " attempt=" + std::to_string(inv.attempt) +
                     " possible_duplicate=" + (inv.possible_duplicate ? "true" : "false") +
                     " sequence=" + std::to_string(inv.sequence) +
                     " payload_bytes=" + std::to_string(inv.payload.size());
  if (!payload.empty()) {
    // One log line per event: newlines in the payload are shown, not obeyed.
    std::string shown;
    for (const char c : printable_text(payload)) {
      if (c == '\n') shown += "\\n";
      else if (c == '\t') shown += "\\t";
      else shown += c;
    }
    line += " payload=\"" + shown + (inv.payload.size() > kLoggedPayloadBytes ? "...\"" : "\"");
  }
  return line;
}

class BuiltinExecutor final : public Executor {
 public:
  BuiltinExecutor(uv_loop_s* loop, HandlerConfig config, LogFn log)
      : config_(std::move(config)), log_(std::move(log)), deferred_(loop) {}

  void run(const node::Invocation& invocation, DoneFn done) override {
    node::InvocationResult result{invocation.id, true, config_.builtin};
    std::string line;
    if (config_.builtin == "log") {
      line = log_line(config_.name, invocation);
    } else if (config_.builtin != "noop") {
      result.ok = false;
      result.detail = "unknown builtin handler '" + config_.builtin + "' (expected noop or log)";
    }
    deferred_.post([this, result, line = std::move(line), done = std::move(done)] {
      // Log at completion, not at run(), so cancel_all() leaves no trace of a run
      // that never completed.
      if (!line.empty() && log_) log_(LogLevel::kInfo, line);
      done(result);
    });
  }

  size_t running() const override { return deferred_.pending(); }
  void cancel_all() override { deferred_.clear(); }

 private:
  HandlerConfig config_;
  LogFn log_;
  DeferredQueue deferred_;
};

}  // namespace

std::unique_ptr<Executor> make_builtin_executor(uv_loop_s* loop, HandlerConfig config, LogFn log) {
  return std::make_unique<BuiltinExecutor>(loop, std::move(config), std::move(log));
}

}  // namespace caesium::daemon
