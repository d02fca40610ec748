// The "chronos" executor: one POST per pop (chronos_executor.h).
#include "node/daemon/exec/chronos_executor.h"

#include <map>

#include "node/daemon/api/chronos.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/exec/handler_invocation.h"
#include "node/daemon/runtime/deferred_queue.h"
#include "node/daemon/http/http_client.h"

namespace caesium::daemon {

namespace {

constexpr size_t kResponseSnippetBytes = 256;

class ChronosExecutor final : public Executor {
 public:
  explicit ChronosExecutor(uv_loop_s* loop) : loop_(loop), deferred_(loop) {}
  ~ChronosExecutor() override { cancel_all(); }

  void run(const node::Invocation& inv, DoneFn done) override {
    auto cb = chronos_callback(inv.payload);
    if (!cb) {
      post_failure(deferred_, inv.id, std::move(done), "chronos timer: " + cb.error().message);
      return;
    }
    if (!client_) client_ = std::make_unique<HttpClient>(loop_);
    HttpRequest req;
    req.url = cb->uri;
    req.method = "POST";
    // Chronos's own pop (src/http_callback.cpp) labels the opaque data as raw bytes;
    // clients written against it may check the header, so a drop-in sends the same.
    req.content_type = "application/octet-stream";
    req.body = std::move(cb->opaque);
    req.headers.emplace_back("X-Sequence-Number", std::to_string(inv.sequence));
    for (auto& h : invocation_headers(inv)) req.headers.push_back(std::move(h));
    req.timeout_ms = kChronosCallbackTimeoutMs;
    req.max_response_bytes = kResponseSnippetBytes;
    const uint64_t call = next_call_++;
    const std::string url = redact_url(req.url);
    calls_.emplace(call, Call{inv.id, std::move(done), 0});
    calls_[call].request_id = client_->request(std::move(req), [this, call, url](const HttpResponse& r) {
      auto it = calls_.find(call);
      if (it == calls_.end()) return;
      node::InvocationResult result;
      result.id = it->second.invocation_id;
      result.ok = r.answered && r.status >= 200 && r.status < 300;
      if (r.answered) {
        result.detail = "HTTP " + std::to_string(r.status) + " from " + url;
        if (!result.ok && !r.body.empty()) result.detail += " " + printable_text(r.body);
      } else {
        result.detail = url + ": " + (r.timed_out ? "timed out after 2s (Chronos's callback limit)" : printable_text(r.error));
      }
      DoneFn d = std::move(it->second.done);
      calls_.erase(it);
      d(result);  // last: it may destroy this executor
    });
  }

  size_t running() const override { return calls_.size() + deferred_.pending(); }

  void cancel_all() override {
    deferred_.clear();
    auto calls = std::move(calls_);
    calls_.clear();
    if (client_) {
      for (const auto& [id, c] : calls) client_->cancel(c.request_id);
    }
  }

 private:
  struct Call {
    uint64_t invocation_id = 0;
    DoneFn done;
    uint64_t request_id = 0;
  };

  uv_loop_s* loop_;
  DeferredQueue deferred_;
  std::unique_ptr<HttpClient> client_;  // made for the first pop
  std::map<uint64_t, Call> calls_;
  uint64_t next_call_ = 1;
};

}  // namespace

std::unique_ptr<Executor> make_chronos_executor(uv_loop_s* loop) { return std::make_unique<ChronosExecutor>(loop); }

}  // namespace caesium::daemon
