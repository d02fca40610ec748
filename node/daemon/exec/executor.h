// Handler executors: how a worker runs an invocation on the daemon's libuv loop.
//
//   exec     spawn argv (uv_spawn) with a timeout; environment carries the invocation
//            (CAESIUM_VOLUME, CAESIUM_ENTITY, CAESIUM_ENTRY, CAESIUM_SCHEDULED (RFC 3339),
//            CAESIUM_SCHEDULED_MS, CAESIUM_FIRE_ID, CAESIUM_ATTEMPT, CAESIUM_POSSIBLE_DUPLICATE
//            ("true"/"false"), CAESIUM_SEQUENCE, CAESIUM_NODE); the payload on stdin;
//            exit status 0 = success.
//   http     POST a JSON body to each URL in turn until one answers 2xx (libcurl multi
//            on the loop); X-Caesium-* headers carry the invocation; timeouts.
//   builtin  noop (succeeds at once), log (writes one log line, succeeds).
//
// Executors never block the loop.  `done` is called exactly once per run, on the loop
// thread, unless the executor is destroyed first (then never).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "node/core/io.h"
#include "node/daemon/config/config.h"

struct uv_loop_s;

namespace caesium::daemon {

using DoneFn = std::function<void(const node::InvocationResult&)>;

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void run(const node::Invocation& invocation, DoneFn done) = 0;
  // Running invocations (for load and for the shutdown grace period).
  virtual size_t running() const = 0;
  // Stop everything now (kill processes, abort requests); no more callbacks.
  virtual void cancel_all() = 0;
  // Stops one run (overlap = replace): exec gets SIGTERM, then SIGKILL kExecKillGraceMs
  // later; an http request is aborted.  Its `done` reports InvocationResult::replaced
  // (possibly before stop returns).  False when this executor does not run it.
  virtual bool stop(uint64_t invocation_id) {
    (void)invocation_id;
    return false;
  }
};

// Checks what the executors need of a handler's configuration (a name; exec: a
// program, valid environment names, timeout > 0; http: http(s) URLs, header names
// that are tokens and values without control characters, none of the X-Caesium-*
// names; builtin: "noop" or "log").  The config loader may call it to report errors
// with the file and line; HandlerSet calls it too, and a handler that fails it fails
// its invocations with this message instead of running.
Status validate_handler(const HandlerConfig& handler);

// Runs invocations by handler name; an unknown handler fails the invocation (it does
// not crash the node).  Reloadable (SIGHUP) without disturbing running invocations.
//
// Threading: everything runs on `loop`'s thread; `log` is called from it too.  `done`
// is called exactly once per run(), never from inside run(), unless cancel_all() or
// the destructor comes first.  From inside `done` one may call run(), reload() and
// cancel_all() (not the destructor).  After cancel_all() or destruction, keep running
// the loop until it has no handles: killed children are reaped by the loop.
//
// reload(): invocations already running finish on the configuration they started
// with, and report through their own `done`; new runs use the new configuration.
class HandlerSet {
 public:
  HandlerSet(uv_loop_s* loop, std::string node_id, std::vector<HandlerConfig> handlers,
             std::function<void(LogLevel, const std::string&)> log);
  ~HandlerSet();
  void run(const node::Invocation& invocation, DoneFn done);
  void reload(std::vector<HandlerConfig> handlers);
  size_t running() const;
  void cancel_all();
  // Executor::stop on whichever executor runs the invocation (none: nothing to stop).
  void stop(uint64_t invocation_id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace caesium::daemon
