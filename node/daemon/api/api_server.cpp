// ApiServer: see api_server.h.
//
// Invariants:
//   - the check handle is active iff waiters_ is not empty; the timer is armed for the
//     earliest waiter deadline while waiters_ is not empty;
//   - every response leaves through `counted`, so ApiCounters::responses_by_status sees
//     each answer once (local, after a wait, relayed or failed forward);
//   - Ticker's handles reach the ApiServer through `owner`, cleared in ~ApiServer before
//     the handles are closed, so a callback never sees a destroyed server.
#include "node/daemon/api/api_server.h"

#include <uv.h>

#include <algorithm>

#include "node/daemon/http/http_client.h"

namespace caesium::daemon {

struct ApiServer::Ticker {
  uv_check_t check{};
  uv_timer_t timer{};
  ApiServer* owner = nullptr;
  int open = 2;
};

struct ApiServer::Forward {
  ServerRequest request;
  std::vector<ReplicaContact> targets;
  std::string volume;
  size_t next = 0;
  std::vector<std::string> failures;
  HttpServer::Respond respond;
  uint64_t request_id = 0;
};

namespace {

constexpr long kForwardConnectionsPerNode = 16;

void on_ticker_closed(uv_handle_t* h) {
  auto* t = static_cast<ApiServer::Ticker*>(h->data);
  if (--t->open == 0) delete t;
}

}  // namespace

ApiServer::ApiServer(uv_loop_s* loop, ApiServerOptions options, ApiBackend& backend)
    : loop_(loop), options_(std::move(options)), backend_(backend), handler_(options_.api, backend) {
  http_ = std::make_unique<HttpServer>(loop_, options_.http, [this](ServerRequest req, HttpServer::Respond respond) {
    on_request(std::move(req), std::move(respond));
  });
  ticker_ = new Ticker;
  ticker_->owner = this;
  uv_check_init(loop_, &ticker_->check);
  uv_timer_init(loop_, &ticker_->timer);
  ticker_->check.data = ticker_;
  ticker_->timer.data = ticker_;
}

ApiServer::~ApiServer() {
  close();
  client_.reset();  // aborts forwards; their callbacks never run
  ticker_->owner = nullptr;
  uv_check_stop(&ticker_->check);
  uv_timer_stop(&ticker_->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(&ticker_->check), on_ticker_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&ticker_->timer), on_ticker_closed);
}

Status ApiServer::listen(const std::string& host_port) { return http_->listen(host_port); }

void ApiServer::close() {
  if (closed_) return;
  closed_ = true;
  waiters_.clear();
  http_->close();
  rearm();
}

size_t ApiServer::forwards_in_flight() const { return client_ ? client_->in_flight() : 0; }

void ApiServer::on_request(ServerRequest request, HttpServer::Respond respond) {
  HttpServer::Respond counted = [this, respond = std::move(respond)](ServerResponse r) {
    handler_.count_response(r.status);
    respond(std::move(r));
  };
  ApiAction action = handler_.handle(request);
  switch (action.kind) {
    case ApiAction::Kind::kRespond:
      counted(std::move(action.response));
      return;
    case ApiAction::Kind::kAwaitWrite:
      await(std::move(action.wait), std::move(action.response), std::move(counted));
      return;
    case ApiAction::Kind::kForward: {
      auto f = std::make_shared<Forward>();
      f->request = std::move(request);
      f->targets = std::move(action.targets);
      f->volume = std::move(action.volume);
      f->respond = std::move(counted);
      forward_next(std::move(f));
      return;
    }
  }
}

void ApiServer::await(WriteWait wait, ServerResponse response, HttpServer::Respond respond) {
  if (closed_) return;
  waiters_.push_back(Waiter{std::move(wait), std::move(response), std::move(respond)});
  poll_waiters();  // the condition may already hold (nothing new to make durable)
}

void ApiServer::poll_waiters() {
  if (waiters_.empty()) {
    rearm();
    return;
  }
  const int64_t now_mono = backend_.now().mono_ms;
  const uint64_t durable = backend_.durable_seq();
  // Answer outside the scan: a respond callback must not see waiters_ mid-change.
  std::vector<std::pair<HttpServer::Respond, ServerResponse>> ready;
  std::vector<Waiter> still;
  for (auto& w : waiters_) {
    if (w.wait.config_proposal != 0) {
      if (auto outcome = backend_.config_outcome(w.wait.config_proposal)) {
        ready.emplace_back(std::move(w.respond), handler_.config_response(*outcome));
      } else if (now_mono >= w.wait.deadline_mono_ms) {
        ready.emplace_back(std::move(w.respond),
                           error_response(503, "the config change was not agreed within the API's wait; it may still "
                                               "be adopted: read the config (caesium config) before applying it again",
                                          "nodes"));
      } else {
        still.push_back(std::move(w));
      }
      continue;
    }
    const bool durable_here = durable >= w.wait.durable_seq;
    size_t acks = 1;
    if (w.wait.replicas > 1) {
      acks = backend_.replica_acks(w.wait.volume, w.wait.key, w.wait.version);
      for (const auto& [key, version] : w.wait.also) {
        acks = std::min(acks, backend_.replica_acks(w.wait.volume, key, version));
      }
    }
    if (durable_here && acks >= w.wait.replicas) {
      ready.emplace_back(std::move(w.respond), std::move(w.response));
    } else if (now_mono >= w.wait.deadline_mono_ms) {
      // replica_acks counts this node as holding the write; it does so durably only
      // once durable_here.
      const size_t reached = durable_here ? acks : (acks > 0 ? acks - 1 : 0);
      ready.emplace_back(std::move(w.respond), handler_.write_timeout_response(w.wait, durable_here, reached));
    } else {
      still.push_back(std::move(w));
    }
  }
  waiters_ = std::move(still);
  rearm();
  for (auto& [respond, response] : ready) respond(std::move(response));
}

void ApiServer::rearm() {
  if (waiters_.empty()) {
    uv_check_stop(&ticker_->check);
    uv_timer_stop(&ticker_->timer);
    return;
  }
  uv_check_start(&ticker_->check, [](uv_check_t* h) {
    auto* t = static_cast<Ticker*>(h->data);
    if (t->owner != nullptr) t->owner->poll_waiters();
  });
  int64_t earliest = waiters_.front().wait.deadline_mono_ms;
  for (const auto& w : waiters_) earliest = std::min(earliest, w.wait.deadline_mono_ms);
  const int64_t wait_ms = std::max<int64_t>(0, earliest - backend_.now().mono_ms) + 1;
  uv_timer_start(&ticker_->timer, [](uv_timer_t* h) {
    auto* t = static_cast<Ticker*>(h->data);
    if (t->owner != nullptr) t->owner->poll_waiters();
  }, static_cast<uint64_t>(wait_ms), 0);
}

void ApiServer::forward_next(std::shared_ptr<Forward> f) {
  if (f->next >= f->targets.size()) {
    f->respond(handler_.forward_failed_response(f->volume, f->failures));
    return;
  }
  const ReplicaContact& target = f->targets[f->next++];
  // At most kForwardConnectionsPerNode connections to one node: well below its
  // api.max_connections_per_client (64 by default), which would otherwise close the
  // connections of a burst of forwards at once.  More forwards wait their turn.
  if (!client_) client_ = std::make_unique<HttpClient>(loop_, kForwardConnectionsPerNode);
  HttpRequest req;
  req.method = f->request.method;
  req.url = options_.forward_scheme + "://" + target.api_addr + f->request.target;
  req.ca_file = options_.forward_ca_file;
  req.cert_file = options_.forward_cert_file;
  req.key_file = options_.forward_key_file;
  req.headers = handler_.forward_headers(f->request);
  const std::string* ct = f->request.header("content-type");
  req.content_type = ct != nullptr ? *ct : std::string();
  req.body = f->request.body;
  req.timeout_ms = options_.forward_timeout_ms;
  req.max_response_bytes = options_.max_forward_response_bytes;
  const std::string who = target.node + " (" + target.api_addr + ")";
  f->request_id = client_->request(std::move(req), [this, f, who](const HttpResponse& r) {
    if (!r.answered) {
      f->failures.push_back(who + ": " + (r.timed_out ? "timed out" : r.error));
      if (r.timed_out) f->next = f->targets.size();  // it may have been applied there
      forward_next(f);
      return;
    }
    ServerResponse out;
    out.status = static_cast<int>(r.status);
    out.body = r.body;
    out.content_type.clear();
    for (const auto& [name, value] : r.headers) {
      if (name == "content-type") out.content_type = value;
      if (name == "location") out.headers.emplace_back("Location", value);
      if (name == "www-authenticate") out.headers.emplace_back("WWW-Authenticate", value);
      if (name == "allow") out.headers.emplace_back("Allow", value);
    }
    f->respond(std::move(out));
  });
}

}  // namespace caesium::daemon
