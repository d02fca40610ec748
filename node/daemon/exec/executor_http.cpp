// The http executor: POST the invocation to each URL in turn until one answers 2xx.
//
// "First success wins" is what lets a clustered client stay reachable when one of its
// instances dies: the handler lists every instance, and a refused connection, a
// timeout or a non-2xx answer moves on to the next URL.  Each request has the whole
// `timeout_ms`, so the worst case is urls.size() x timeout_ms — unless the entry sets its
// own `timeout`: that bounds the whole call, every URL included, and the request in flight
// when it runs out is aborted (recorded timed_out).
#include <algorithm>
#include <chrono>
#include <map>

#include "base/time.h"

#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/exec/handler_invocation.h"
#include "node/daemon/http/http_client.h"

namespace caesium::daemon {

namespace {

constexpr size_t kResponseSnippetBytes = 256;

class HttpExecutor final : public Executor {
 public:
  HttpExecutor(HttpClient& client, std::string node_id, HandlerConfig config)
      : client_(client), node_id_(std::move(node_id)), config_(std::move(config)) {}
  ~HttpExecutor() override { cancel_all(); }

  void run(const node::Invocation& invocation, DoneFn done) override {
    const uint64_t call_id = next_call_id_++;
    Call& call = calls_[call_id];
    call.invocation_id = invocation.id;
    call.done = std::move(done);
    call.body = invocation_json(invocation, node_id_);
    call.headers = invocation_headers(invocation);
    for (const auto& h : config_.headers) call.headers.push_back(h);
    call.entry_timeout_ms = invocation.timeout_ms;
    if (call.entry_timeout_ms > 0) call.deadline_ms = steady_ms() + call.entry_timeout_ms;
    try_next(call_id);
  }

  size_t running() const override { return calls_.size(); }

  bool stop(uint64_t invocation_id) override {
    for (auto it = calls_.begin(); it != calls_.end(); ++it) {
      if (it->second.invocation_id != invocation_id) continue;
      client_.cancel(it->second.request_id);
      node::InvocationResult result;
      result.id = invocation_id;
      result.replaced = true;
      result.detail = "aborted: replaced by a later occurrence";
      if (!it->second.failures.empty()) result.detail += " (before: " + join(it->second.failures) + ")";
      DoneFn d = std::move(it->second.done);
      calls_.erase(it);
      d(result);  // last: it may destroy this executor
      return true;
    }
    return false;
  }

  void cancel_all() override {
    auto calls = std::move(calls_);
    calls_.clear();
    for (const auto& [id, call] : calls) client_.cancel(call.request_id);
  }

 private:
  struct Call {
    uint64_t invocation_id = 0;
    DoneFn done;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    size_t next_url = 0;
    uint64_t request_id = 0;
    std::vector<std::string> failures;  // one per URL tried, in order
    int64_t entry_timeout_ms = 0;       // the entry's timeout for the whole call (0: none)
    int64_t deadline_ms = 0;            // steady_ms() when it runs out
    int64_t request_timeout_ms = 0;     // of the request in flight
  };

  static int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Sends the call to its next URL.  REQUIRES: the call exists and has one left
  // (HandlerSet validates that urls is not empty; an empty list fails at once below).
  void try_next(uint64_t call_id) {
    Call& call = calls_.at(call_id);
    HttpRequest req;
    req.url = config_.urls.empty() ? std::string() : config_.urls[call.next_url];
    req.headers = call.headers;
    req.body = call.body;
    req.timeout_ms = config_.timeout_ms;
    if (call.entry_timeout_ms > 0) req.timeout_ms = std::max<int64_t>(1, call.deadline_ms - steady_ms());
    call.request_timeout_ms = req.timeout_ms;
    req.max_response_bytes = kResponseSnippetBytes;
    ++call.next_url;
    call.request_id =
        client_.post(std::move(req), [this, call_id](const HttpResponse& r) { on_response(call_id, r); });
  }

  void on_response(uint64_t call_id, const HttpResponse& r) {
    auto it = calls_.find(call_id);
    if (it == calls_.end()) return;
    Call& call = it->second;
    const std::string url = redact_url(config_.urls.empty() ? "" : config_.urls[call.next_url - 1]);
    const bool success = r.answered && r.status >= 200 && r.status < 300;
    if (!success) {
      std::string why;
      if (r.answered) {
        why = url + ": HTTP " + std::to_string(r.status);
        if (!r.body.empty()) why += " " + printable_text(r.body);
      } else {
        why = url + ": " + (r.timed_out ? "timed out after " + format_duration_ms(call.request_timeout_ms)
                                        : printable_text(r.error));
      }
      call.failures.push_back(std::move(why));
      const bool out_of_time = call.entry_timeout_ms > 0 && steady_ms() >= call.deadline_ms;
      if (call.next_url < config_.urls.size() && !out_of_time) {
        try_next(call_id);
        return;
      }
      if (out_of_time) call.failures.push_back("the entry's timeout of " + format_duration_ms(call.entry_timeout_ms) + " ran out");
    }
    node::InvocationResult result;
    result.id = call.invocation_id;
    result.ok = success;
    result.timed_out = !success && r.timed_out;
    if (success) {
      result.detail = "HTTP " + std::to_string(r.status) + " from " + url;
      if (!call.failures.empty()) result.detail += " (after: " + join(call.failures) + ")";
    } else {
      result.detail = "no URL answered 2xx: " + join(call.failures);
    }
    DoneFn d = std::move(call.done);
    calls_.erase(it);
    d(result);  // last: it may destroy this executor
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) {
      if (!out.empty()) out += "; ";
      out += p;
    }
    return out;
  }

  HttpClient& client_;
  std::string node_id_;
  HandlerConfig config_;
  std::map<uint64_t, Call> calls_;
  uint64_t next_call_id_ = 1;
};

}  // namespace

std::unique_ptr<Executor> make_http_executor(HttpClient& client, std::string node_id,
                                             HandlerConfig config) {
  return std::make_unique<HttpExecutor>(client, std::move(node_id), std::move(config));
}

}  // namespace caesium::daemon
