// HandlerSet: handler name -> executor, reloadable; and validate_handler.
//
// Invariants:
//   - `handlers` holds one entry per configured name: an executor, or the validation
//     error that stops the handler from running;
//   - `retired` holds executors replaced by reload() that still had running work;
//     they are dropped once idle (checked on the next run() or reload());
//   - the HttpClient is declared before the executors, so it outlives them.
#include <map>

#include "node/daemon/exec/executor.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/runtime/deferred_queue.h"
#include "node/daemon/http/http_client.h"

namespace caesium::daemon {

namespace {

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(s[i]) != lower(prefix[i])) return false;
  }
  return true;
}

bool is_token(std::string_view name) {  // RFC 9110 token: the characters of a header name
  if (name.empty()) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool has_control(std::string_view s, bool allow_tab) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && !(allow_tab && c == '\t')) || c == 0x7F) return true;
  }
  return false;
}

Error bad(const HandlerConfig& h, const std::string& field, const std::string& what) {
  return Error("handler '" + h.name + "': " + what, "handlers." + h.name + "." + field);
}

}  // namespace

void post_failure(DeferredQueue& queue, uint64_t invocation_id, DoneFn done, std::string detail) {
  queue.post([invocation_id, done = std::move(done), detail = std::move(detail)] {
    done(node::InvocationResult{invocation_id, false, detail});
  });
}

Status validate_handler(const HandlerConfig& h) {
  if (h.name.empty()) return Error("a handler has no name", "handlers.name");
  switch (h.kind) {
    case HandlerConfig::Kind::kExec:
      if (h.argv.empty() || h.argv[0].empty()) return bad(h, "argv", "argv needs at least the program");
      for (const auto& a : h.argv) {
        if (a.find('\0') != std::string::npos) return bad(h, "argv", "an argument contains a NUL byte");
      }
      for (const auto& [name, value] : h.env) {
        if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
          return bad(h, "env", "'" + name + "' is not a valid environment variable name");
        }
        if (value.find('\0') != std::string::npos) return bad(h, "env", name + " contains a NUL byte");
      }
      break;
    case HandlerConfig::Kind::kHttp:
      if (h.urls.empty()) return bad(h, "urls", "an http handler needs at least one URL");
      for (const auto& u : h.urls) {
        if (!starts_with_nocase(u, "http://") && !starts_with_nocase(u, "https://")) {
          return bad(h, "urls", "'" + u + "' is not an http:// or https:// URL");
        }
        if (has_control(u, false)) return bad(h, "urls", "a URL contains a control character");
      }
      for (const auto& [name, value] : h.headers) {
        if (!is_token(name)) return bad(h, "headers", "'" + name + "' is not a valid header name");
        if (starts_with_nocase(name, "x-caesium-") || starts_with_nocase(name, "content-type")) {
          return bad(h, "headers", name + " is set by Caesium and cannot be configured");
        }
        if (has_control(value, true)) return bad(h, "headers", "the value of " + name + " contains a control character");
      }
      break;
    case HandlerConfig::Kind::kBuiltin:
      if (h.builtin != "noop" && h.builtin != "log") {
        return bad(h, "builtin", "'" + h.builtin + "' is not a builtin handler (expected noop or log)");
      }
      return Status::success();
  }
  if (h.timeout_ms <= 0) return bad(h, "timeout", "the timeout must be positive");
  return Status::success();
}

struct HandlerSet::Impl {
  struct Handler {
    std::unique_ptr<Executor> executor;  // null when the configuration is invalid
    std::string error;
  };

  Impl(uv_loop_s* l, std::string id, LogFn lg) : loop(l), node_id(std::move(id)), log(std::move(lg)), deferred(l) {}

  void say(LogLevel level, const std::string& line) const {
    if (log) log(level, line);
  }

  void install(std::vector<HandlerConfig> configs) {
    std::map<std::string, Handler> next;
    for (auto& c : configs) {
      if (next.count(c.name) != 0) {
        say(LogLevel::kWarn, "handler '" + c.name + "' is configured twice; the first one is used");
        continue;
      }
      Handler h;
      if (Status s = validate_handler(c); !s.ok()) {
        h.error = s.error().message;
        say(LogLevel::kWarn, h.error + "; its invocations will fail");
      } else if (c.kind == HandlerConfig::Kind::kExec) {
        h.executor = make_exec_executor(loop, node_id, c);
      } else if (c.kind == HandlerConfig::Kind::kHttp) {
        if (!http) http = std::make_unique<HttpClient>(loop);
        h.executor = make_http_executor(*http, node_id, c);
      } else {
        h.executor = make_builtin_executor(loop, c, log);
      }
      const std::string name = c.name;
      next.emplace(name, std::move(h));
    }
    for (auto& [name, h] : handlers) {
      if (h.executor && h.executor->running() > 0) retired.push_back(std::move(h.executor));
    }
    handlers = std::move(next);
  }

  void prune_retired() {
    std::erase_if(retired, [](const std::unique_ptr<Executor>& e) { return e->running() == 0; });
  }

  uv_loop_s* loop;
  std::string node_id;
  LogFn log;
  DeferredQueue deferred;              // failures known at once (unknown handler)
  std::unique_ptr<HttpClient> http;    // made when the first http handler appears
  std::map<std::string, Handler> handlers;
  std::vector<std::unique_ptr<Executor>> retired;
};

HandlerSet::HandlerSet(uv_loop_s* loop, std::string node_id, std::vector<HandlerConfig> handlers,
                       std::function<void(LogLevel, const std::string&)> log)
    : impl_(std::make_unique<Impl>(loop, std::move(node_id), std::move(log))) {
  impl_->install(std::move(handlers));
}

HandlerSet::~HandlerSet() { cancel_all(); }

void HandlerSet::run(const node::Invocation& invocation, DoneFn done) {
  impl_->prune_retired();
  auto it = impl_->handlers.find(invocation.handler);
  if (it == impl_->handlers.end()) {
    post_failure(impl_->deferred, invocation.id, std::move(done),
                      "no handler named " + invocation.handler + " on node " + impl_->node_id);
    return;
  }
  if (!it->second.executor) {
    post_failure(impl_->deferred, invocation.id, std::move(done), it->second.error);
    return;
  }
  it->second.executor->run(invocation, std::move(done));
}

void HandlerSet::reload(std::vector<HandlerConfig> handlers) {
  impl_->prune_retired();
  impl_->install(std::move(handlers));
}

size_t HandlerSet::running() const {
  size_t n = impl_->deferred.pending();
  for (const auto& [name, h] : impl_->handlers) {
    if (h.executor) n += h.executor->running();
  }
  for (const auto& e : impl_->retired) n += e->running();
  return n;
}

void HandlerSet::stop(uint64_t invocation_id) {
  for (auto& [name, h] : impl_->handlers) {
    if (h.executor && h.executor->stop(invocation_id)) return;
  }
  for (auto& e : impl_->retired) {
    if (e->stop(invocation_id)) return;
  }
}

void HandlerSet::cancel_all() {
  impl_->deferred.clear();
  for (auto& [name, h] : impl_->handlers) {
    if (h.executor) h.executor->cancel_all();
  }
  impl_->retired.clear();  // destroying an executor cancels it
}

}  // namespace caesium::daemon
