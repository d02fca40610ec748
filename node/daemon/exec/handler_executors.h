// The three kinds of executor behind HandlerSet (executor.h), one instance per
// configured handler.  HandlerSet is what the runtime uses; these factories exist for
// it and for tests.
//
// All of them live on one libuv loop and must be used from the loop's thread only.
// None of them calls `done` from inside `run`: even an answer known at once (noop, a
// program that does not exist) arrives on a later loop turn.  Destroying an executor
// is cancel_all(): running work is stopped and its `done` is never called.  Handles
// and child processes still being torn down after that are finished by the loop, so
// the runtime should keep running the loop until it has no more handles (the usual
// libuv shutdown: close everything, then uv_run until it returns 0).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "node/daemon/config/config.h"
#include "node/daemon/exec/executor.h"

namespace caesium::daemon {

class DeferredQueue;
class HttpClient;

using LogFn = std::function<void(LogLevel, const std::string&)>;

// exec: see ExecExecutor's comment in executor_exec.cpp for the process lifecycle.
//   - the child runs in its own session / process group (setsid), so a timeout or
//     cancel_all signals the whole group, grandchildren included;
//   - empty `config.cwd` = the daemon's working directory (the config loader resolves
//     the documented "" = data_dir before it gets here);
//   - stdout and stderr: the last kExecOutputTailBytes of each go into the detail;
//   - timeout: SIGTERM to the group, SIGKILL kExecKillGraceMs later.
// The first exec executor made in a process sets SIGPIPE to "ignore" (a child that
// closes its stdin early must give EPIPE, not kill the daemon); libuv restores the
// default disposition in each child before exec.
inline constexpr size_t kExecOutputTailBytes = 4096;
inline constexpr int64_t kExecKillGraceMs = 2000;
std::unique_ptr<Executor> make_exec_executor(uv_loop_s* loop, std::string node_id,
                                             HandlerConfig config);

// http: POSTs to config.urls in order until one answers 2xx, each request bounded by
// config.timeout_ms.  REQUIRES: `client` outlives the executor.
std::unique_ptr<Executor> make_http_executor(HttpClient& client, std::string node_id,
                                             HandlerConfig config);

// builtin: "noop" succeeds; "log" writes one kInfo line through `log` and succeeds.
std::unique_ptr<Executor> make_builtin_executor(uv_loop_s* loop, HandlerConfig config, LogFn log);

// Fails an invocation on a later loop turn (through `queue`), for answers known at once.
void post_failure(DeferredQueue& queue, uint64_t invocation_id, DoneFn done, std::string detail);

}  // namespace caesium::daemon
