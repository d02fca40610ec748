// libFuzzer target: the API's request path — the HTTP parser, routing, auth, JSON bodies
// (entries, cluster configs, Chronos timers), the answers and their serialisation —
// against a real Node core (tests/unit/daemon_api_fixture.h), fresh for every input so
// a crash replays from its input alone.
//
// Input: byte 0 picks how the stream is cut into reads (1..64 bytes each, so the
// incremental parser sees every split); byte 1 picks the token mode; the rest is the
// byte stream of one connection (any number of requests).  Invariants checked:
//   - the parser either completes requests or fails with a 4xx/5xx status and a message;
//   - every answer is a valid status with a JSON body (or an empty one for 204 and the
//     Chronos answers), and serialises without the body being cut;
//   - nothing throws (the handler's catch-all must never be reached: no 500s).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "node/daemon/api/api.h"
#include "node/daemon/http/http_request.h"
#include "tests/unit/daemon_api_fixture.h"

namespace {

using namespace caesium;
using namespace caesium::daemon;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "http_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

void check_answer(const ServerResponse& r) {
  check(r.status >= 100 && r.status <= 599, "status out of range");
  check(r.status != 500, "the handler hit its catch-all (an exception escaped)");
  if (!r.body.empty() && r.content_type == "application/json") {
    check(!nlohmann::json::parse(r.body, nullptr, false).is_discarded(), "a JSON answer does not parse");
  }
  const std::string wire = serialize_response(r, false);
  check(wire.rfind("HTTP/1.1 ", 0) == 0, "bad status line");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const uint8_t mode = data[1];
  std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  test::ApiTestNode n;
  ApiOptions options = test::api_test_options();
  if (mode & 1) options.token.clear();
  if (mode & 2) options.chronos_requires_token = true;
  if (mode & 4) options.max_list_limit = 3;
  n.contacts["far"] = {{"n3", "127.0.0.1:3", true, true}, {"n2", "127.0.0.1:2", true, false}};
  ApiHandler handler(options, n.backend());
  HttpLimits limits;
  limits.max_header_bytes = 2048;
  limits.max_headers = 32;
  limits.max_body_bytes = 8192;
  RequestParser parser(limits);

  size_t at = 0;
  while (at < stream.size() && parser.state() != RequestParser::State::kError) {
    parser.feed(stream.substr(at, chunk));
    at += chunk;
    (void)parser.take_expect_continue();
    while (parser.state() == RequestParser::State::kComplete) {
      ServerRequest req = parser.take();
      check(!req.method.empty() && !req.path.empty() && req.path[0] == '/', "a complete request without method or path");
      ApiAction a = handler.handle(req);
      check_answer(a.response);
      if (a.kind == ApiAction::Kind::kAwaitWrite) {
        n.settle();
        check(n.backend().durable_seq() >= a.wait.durable_seq, "a write's barrier is never reached");
        check_answer(handler.write_timeout_response(a.wait, false, 0));
      } else if (a.kind == ApiAction::Kind::kForward) {
        check(!a.targets.empty(), "a forward without targets");
        check_answer(handler.forward_failed_response(a.volume, {"x: refused"}));
        (void)handler.forward_headers(req);
      }
    }
  }
  if (parser.state() == RequestParser::State::kError) {
    const int s = parser.error_status();
    check(s >= 400 && s <= 599, "parser error status out of range");
    check(!parser.error_message().empty(), "parser error without a message");
  }
  return 0;
}
