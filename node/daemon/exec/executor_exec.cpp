// The exec executor: one child process per invocation, spawned with libuv.
//
// Lifecycle of a Child (one invocation):
//
//   spawn ──► running ──exit──► draining ──pipes at EOF, or kDrainMs──► finished
//                │                 ▲
//             timeout              │ exit
//                ▼                 │
//           terminating (SIGTERM to the group; SIGKILL kExecKillGraceMs later)
//
// stop() (overlap = replace) enters terminating from running as a timeout does; the run
// then reports `replaced` instead of `timed_out`.
//
// Invariants:
//   - `done` is called at most once, from `finish`, always from a loop callback;
//   - the process handle is closed only after libuv reaped the child (its exit
//     callback ran) or when the spawn failed; closing it earlier would stop libuv
//     from calling waitpid for it and leave a zombie;
//   - a Child frees itself in the last close callback of its five handles, so the
//     executor can be destroyed at any time: it detaches its children (owner = null),
//     kills them, and the loop finishes reaping and closing.
//
// Why "draining": after the child exits, what it wrote may still sit in the pipes.
// We read until both reach EOF, but a grandchild that inherited stdout may keep it
// open indefinitely, so the wait is bounded by kDrainMs.
#include <signal.h>
#include <string.h>
#include <uv.h>

#include <cassert>
#include <map>
#include <mutex>
#include <set>

#include "base/time.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/exec/handler_invocation.h"
#include "node/daemon/runtime/deferred_queue.h"

extern char** environ;

namespace caesium::daemon {

namespace {

constexpr int64_t kDrainMs = 200;

class ExecExecutor;

struct Child {
  enum class Phase : uint8_t { kRunning, kTerminating, kDraining, kFinished };

  uv_process_t process{};
  uv_pipe_t in{};
  uv_pipe_t out{};
  uv_pipe_t err{};
  uv_timer_t timer{};
  uv_write_t write_req{};
  int open_handles = 0;

  ExecExecutor* owner = nullptr;  // null once detached (cancelled)
  uint64_t invocation_id = 0;
  DoneFn done;
  std::string program;
  int64_t timeout_ms = 0;
  std::string payload;  // must outlive the pending write

  Phase phase = Phase::kRunning;
  bool spawned = false;
  bool exited = false;
  bool timed_out = false;
  bool replaced = false;  // stopped by ExecExecutor::stop
  bool out_eof = false;
  bool err_eof = false;
  int64_t exit_status = 0;
  int term_signal = 0;
  int last_signal_sent = 0;
  TailBuffer out_tail{kExecOutputTailBytes};
  TailBuffer err_tail{kExecOutputTailBytes};
  char read_buffer[16 * 1024];  // reads are synchronous: one buffer serves both pipes

  uv_handle_t* handle(void* h) { return static_cast<uv_handle_t*>(h); }
  void signal_group(int sig);
  void close_handles();
  void detach();
  void finish();
  std::string describe_end() const;
};

class ExecExecutor final : public Executor {
 public:
  ExecExecutor(uv_loop_s* loop, std::string node_id, HandlerConfig config)
      : loop_(loop), node_id_(std::move(node_id)), config_(std::move(config)), deferred_(loop) {
    // Once per process: a write to a child that closed its stdin must fail with EPIPE
    // rather than kill the daemon.  libuv resets signal dispositions in the child.
    static std::once_flag ignore_sigpipe;
    std::call_once(ignore_sigpipe, [] { signal(SIGPIPE, SIG_IGN); });
  }
  ~ExecExecutor() override { cancel_all(); }

  void run(const node::Invocation& invocation, DoneFn done) override;
  size_t running() const override { return children_.size() + deferred_.pending(); }
  bool stop(uint64_t invocation_id) override;
  void cancel_all() override {
    deferred_.clear();
    auto children = std::move(children_);
    children_.clear();
    for (Child* c : children) c->detach();
  }

  void forget(Child* c) { children_.erase(c); }

 private:
  uv_loop_s* loop_;
  std::string node_id_;
  HandlerConfig config_;
  DeferredQueue deferred_;
  std::set<Child*> children_;  // owned by the loop (self-freeing); listed while attached
};

Child* child_of(void* handle) { return static_cast<Child*>(static_cast<uv_handle_t*>(handle)->data); }

void on_close(uv_handle_t* h) {
  Child* c = child_of(h);
  if (--c->open_handles == 0) delete c;
}

void Child::signal_group(int sig) {
  // Only while libuv has not reaped the child: until then its pid (and the process
  // group it leads, from setsid) cannot have been reused.
  if (!spawned || exited) return;
  last_signal_sent = sig;
  if (kill(-process.pid, sig) != 0) kill(process.pid, sig);  // it left its group
}

void Child::close_handles() {
  const auto close = [this](void* h) {
    if (!uv_is_closing(handle(h))) uv_close(handle(h), on_close);
  };
  close(&in);
  close(&out);
  close(&err);
  close(&timer);
  if (!spawned || exited) close(&process);
}

void Child::detach() {
  owner = nullptr;
  done = nullptr;
  if (phase == Phase::kFinished) return;
  phase = Phase::kFinished;
  signal_group(SIGKILL);
  close_handles();  // the process handle waits for the exit callback (see on_child_exit)
}

std::string Child::describe_end() const {
  if (replaced) {
    std::string s = std::string("stopped: replaced by a later occurrence; sent ") +
                    (last_signal_sent == SIGKILL ? "SIGKILL" : "SIGTERM");
    if (term_signal != 0) s += ", killed by signal " + std::to_string(term_signal);
    else s += ", then it exited with status " + std::to_string(exit_status);
    return s;
  }
  if (timed_out) {
    std::string s = "timed out after " + format_duration_ms(timeout_ms) + "; sent " +
                    (last_signal_sent == SIGKILL ? "SIGKILL" : "SIGTERM");
    if (term_signal != 0) s += ", killed by signal " + std::to_string(term_signal);
    else s += ", then it exited with status " + std::to_string(exit_status);
    return s;
  }
  if (term_signal != 0) {
    const char* name = strsignal(term_signal);
    return "killed by signal " + std::to_string(term_signal) + " (" + (name ? name : "?") + ")";
  }
  return "exit status " + std::to_string(exit_status);
}

void Child::finish() {
  assert(phase != Phase::kFinished);
  phase = Phase::kFinished;
  close_handles();
  node::InvocationResult result;
  result.id = invocation_id;
  result.ok = !timed_out && !replaced && term_signal == 0 && exit_status == 0;
  result.timed_out = timed_out;
  result.replaced = replaced;
  result.detail = describe_end() + output_section("stdout", out_tail) +
                  output_section("stderr", err_tail);
  DoneFn d = std::move(done);
  if (owner != nullptr) owner->forget(this);
  owner = nullptr;
  // Last: `d` may destroy the executor.  This Child stays valid until its handles close.
  if (d) d(result);
}

void on_timer(uv_timer_t* t) {
  Child* c = child_of(t);
  switch (c->phase) {
    case Child::Phase::kRunning:
      c->timed_out = true;
      c->phase = Child::Phase::kTerminating;
      c->signal_group(SIGTERM);
      uv_timer_start(&c->timer, on_timer, kExecKillGraceMs, 0);
      break;
    case Child::Phase::kTerminating:
      c->signal_group(SIGKILL);
      break;
    case Child::Phase::kDraining:
      c->finish();
      break;
    case Child::Phase::kFinished:
      break;
  }
}

void on_child_exit(uv_process_t* p, int64_t exit_status, int term_signal) {
  Child* c = child_of(p);
  // On a timeout, sweep the rest of the group now, while the group id is still
  // reserved by its members (the kernel does not reuse a pid that names a group).
  if ((c->timed_out || c->replaced) && kill(-p->pid, SIGKILL) != 0) { /* the group is already empty */ }
  c->exited = true;
  c->exit_status = exit_status;
  c->term_signal = term_signal;
  if (c->phase == Child::Phase::kFinished) {  // detached: only the process handle is left
    uv_close(c->handle(p), on_close);
    return;
  }
  c->phase = Child::Phase::kDraining;
  if (c->out_eof && c->err_eof) {
    c->finish();
  } else {
    uv_timer_start(&c->timer, on_timer, kDrainMs, 0);
  }
}

bool ExecExecutor::stop(uint64_t invocation_id) {
  for (Child* c : children_) {
    if (c->invocation_id != invocation_id) continue;
    if (c->phase == Child::Phase::kRunning) {  // terminating, draining: it is ending already
      c->replaced = true;
      c->phase = Child::Phase::kTerminating;
      c->signal_group(SIGTERM);
      uv_timer_start(&c->timer, on_timer, kExecKillGraceMs, 0);
    }
    return true;
  }
  return false;
}

void on_alloc(uv_handle_t* h, size_t /*suggested*/, uv_buf_t* buf) {
  Child* c = child_of(h);
  *buf = uv_buf_init(c->read_buffer, sizeof c->read_buffer);
}

void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  Child* c = child_of(s);
  const bool is_out = s == reinterpret_cast<uv_stream_t*>(&c->out);
  if (nread > 0) {
    (is_out ? c->out_tail : c->err_tail).append(buf->base, static_cast<size_t>(nread));
    return;
  }
  if (nread == 0) return;  // EAGAIN
  // EOF or a read error: either way this pipe is done.
  uv_read_stop(s);
  (is_out ? c->out_eof : c->err_eof) = true;
  if (c->phase == Child::Phase::kDraining && c->out_eof && c->err_eof) c->finish();
}

void on_written(uv_write_t* req, int /*status*/) {
  // Success, EPIPE (the child closed stdin or exited) or ECANCELED (we are closing):
  // in every case the child has all of stdin it will get, so close our end.
  Child* c = child_of(req->handle);
  if (!uv_is_closing(c->handle(&c->in))) uv_close(c->handle(&c->in), on_close);
}

std::string spawn_error_detail(const std::string& program, const std::string& cwd, int rc) {
  std::string s = "cannot run '" + program + "': " + uv_strerror(rc) + " (" + uv_err_name(rc) + ")";
  if (!cwd.empty()) s += " (working directory '" + cwd + "')";
  return s;
}

void ExecExecutor::run(const node::Invocation& invocation, DoneFn done) {
  if (config_.argv.empty() || config_.argv[0].empty()) {
    post_failure(deferred_, invocation.id, std::move(done), "handler '" + config_.name + "' has no program");
    return;
  }
  auto* c = new Child;
  c->invocation_id = invocation.id;
  c->program = config_.argv[0];
  c->timeout_ms = invocation.timeout_ms > 0 ? invocation.timeout_ms : config_.timeout_ms;  // the entry's first
  c->payload = invocation.payload;
  uv_pipe_init(loop_, &c->in, 0);
  uv_pipe_init(loop_, &c->out, 0);
  uv_pipe_init(loop_, &c->err, 0);
  uv_timer_init(loop_, &c->timer);
  for (uv_handle_t* h : {c->handle(&c->in), c->handle(&c->out), c->handle(&c->err),
                         c->handle(&c->timer)}) {
    h->data = c;
  }
  c->open_handles = 5;  // the process handle too: uv_spawn initialises it even on failure

  std::vector<std::string> env = exec_environment(environ, config_.env, invocation, node_id_);
  std::vector<char*> env_ptrs;
  for (auto& e : env) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  std::vector<std::string> args = config_.argv;
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);

  uv_stdio_container_t stdio[3];
  stdio[0].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_READABLE_PIPE);
  stdio[0].data.stream = reinterpret_cast<uv_stream_t*>(&c->in);
  stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(&c->out);
  stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(&c->err);

  uv_process_options_t options{};
  options.exit_cb = on_child_exit;
  options.file = arg_ptrs[0];
  options.args = arg_ptrs.data();
  options.env = env_ptrs.data();
  options.cwd = config_.cwd.empty() ? nullptr : config_.cwd.c_str();
  options.flags = UV_PROCESS_DETACHED;  // its own session: signals reach the whole group
  options.stdio_count = 3;
  options.stdio = stdio;

  const int rc = uv_spawn(loop_, &c->process, &options);
  c->process.data = c;
  if (rc != 0) {
    c->phase = Child::Phase::kFinished;
    c->close_handles();
    post_failure(deferred_, invocation.id, std::move(done), spawn_error_detail(c->program, config_.cwd, rc));
    return;
  }
  c->spawned = true;
  c->owner = this;
  c->done = std::move(done);
  children_.insert(c);

  uv_read_start(reinterpret_cast<uv_stream_t*>(&c->out), on_alloc, on_read);
  uv_read_start(reinterpret_cast<uv_stream_t*>(&c->err), on_alloc, on_read);
  if (c->payload.empty()) {
    uv_close(c->handle(&c->in), on_close);
  } else {
    uv_buf_t buf = uv_buf_init(c->payload.data(), static_cast<unsigned>(c->payload.size()));
    if (uv_write(&c->write_req, reinterpret_cast<uv_stream_t*>(&c->in), &buf, 1, on_written) != 0) {
      uv_close(c->handle(&c->in), on_close);
    }
  }
  uv_timer_start(&c->timer, on_timer, static_cast<uint64_t>(c->timeout_ms > 0 ? c->timeout_ms : 1), 0);
}

}  // namespace

std::unique_ptr<Executor> make_exec_executor(uv_loop_s* loop, std::string node_id,
                                             HandlerConfig config) {
  return std::make_unique<ExecExecutor>(loop, std::move(node_id), std::move(config));
}

}  // namespace caesium::daemon
