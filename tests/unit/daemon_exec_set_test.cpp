// HandlerSet (lookup by name, unknown names, bad configurations, reload, cancel_all),
// the builtin executors, validate_handler and the presentation helpers.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "node/daemon/exec/executor.h"
#include "node/daemon/exec/handler_invocation.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::TestLoop;

namespace {

HandlerConfig builtin(const std::string& name, const std::string& which) {
  HandlerConfig c;
  c.name = name;
  c.kind = HandlerConfig::Kind::kBuiltin;
  c.builtin = which;
  return c;
}

HandlerConfig exec(const std::string& name, const std::string& script) {
  HandlerConfig c;
  c.name = name;
  c.kind = HandlerConfig::Kind::kExec;
  c.argv = {"/bin/sh", "-c", script};
  return c;
}

node::Invocation invocation(uint64_t id, const std::string& handler) {
  node::Invocation inv;
  inv.id = id;
  inv.handler = handler;
  inv.volume = "v1";
  inv.entity = "e1";
  inv.entry = "tick";
  inv.scheduled_utc_ms = 1'774'747'800'000;
  inv.fire_id = "fire-" + std::to_string(id);
  inv.sequence = 5;
  return inv;
}

struct Harness {
  TestLoop loop;
  std::vector<std::pair<LogLevel, std::string>> logs;
  std::map<uint64_t, node::InvocationResult> results;
  std::unique_ptr<HandlerSet> set;

  explicit Harness(std::vector<HandlerConfig> handlers) {
    set = std::make_unique<HandlerSet>(loop.get(), "n1", std::move(handlers),
                                       [this](LogLevel l, const std::string& s) { logs.emplace_back(l, s); });
  }
  ~Harness() {
    set.reset();
    CHECK(loop.drain());
  }
  // run() must not call done before it returns.
  void run(uint64_t id, const std::string& handler) {
    auto returned = std::make_shared<bool>(false);
    set->run(invocation(id, handler), [this, returned](const node::InvocationResult& r) {
      CHECK(*returned);
      results[r.id] = r;
    });
    *returned = true;
  }
  bool wait_for(size_t n) {
    return loop.run_until([&] { return results.size() >= n; });
  }
};

}  // namespace

TEST_CASE("builtin noop succeeds on a later loop turn, log writes one line") {
  Harness h({builtin("nothing", "noop"), builtin("say", "log")});
  h.run(1, "nothing");
  node::Invocation inv = invocation(2, "say");
  inv.payload = "line one\nline two";
  bool returned = false;
  h.set->run(inv, [&](const node::InvocationResult& r) {
    CHECK(returned);
    h.results[r.id] = r;
  });
  returned = true;
  CHECK(h.results.empty());
  CHECK(h.set->running() == 2);
  REQUIRE(h.wait_for(2));
  CHECK(h.results[1].ok);
  CHECK(h.results[2].ok);
  CHECK(h.set->running() == 0);
  REQUIRE(h.logs.size() == 1);
  CHECK(h.logs[0].first == LogLevel::kInfo);
  const std::string& line = h.logs[0].second;
  CHECK(line.find('\n') == std::string::npos);
  for (const char* part : {"fire_id=fire-2", "volume=v1", "entity=e1", "entry=tick",
                           "scheduled=2026-03-29T01:30:00Z", "attempt=1", "possible_duplicate=false",
                           "sequence=5", "payload=\"line one\\nline two\""}) {
    CHECK(line.find(part) != std::string::npos);
  }
}

TEST_CASE("HandlerSet: an unknown handler fails the invocation, not the node") {
  Harness h({builtin("nothing", "noop")});
  h.run(7, "missing");
  REQUIRE(h.wait_for(1));
  CHECK_FALSE(h.results[7].ok);
  CHECK(h.results[7].detail == "no handler named missing on node n1");
}

TEST_CASE("HandlerSet: a misconfigured handler fails its invocations with the reason") {
  HandlerConfig bad_http;
  bad_http.name = "hook";
  bad_http.kind = HandlerConfig::Kind::kHttp;
  bad_http.urls = {"ftp://example.com/x"};
  Harness h({builtin("odd", "dance"), bad_http, builtin("odd", "noop")});
  h.run(1, "odd");
  h.run(2, "hook");
  REQUIRE(h.wait_for(2));
  CHECK_FALSE(h.results[1].ok);
  CHECK(h.results[1].detail.find("'dance' is not a builtin handler") != std::string::npos);
  CHECK_FALSE(h.results[2].ok);
  CHECK(h.results[2].detail.find("is not an http:// or https:// URL") != std::string::npos);
  // Each problem was logged once, as a warning (the duplicate name too).
  CHECK(h.logs.size() == 3);
  for (const auto& [level, text] : h.logs) CHECK(level == LogLevel::kWarn);
}

TEST_CASE("HandlerSet: reload swaps handlers, running invocations finish on the old one") {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "caesium-set-XXXXXX").string();
  const fs::path dir = mkdtemp(tmpl.data());
  const std::string gate = (dir / "gate").string();
  // The old "job" waits for a file the test creates after the reload.
  Harness h({exec("job", "while [ ! -e " + gate + " ]; do sleep 0.01; done; echo old"), builtin("gone", "noop")});
  h.run(1, "job");
  CHECK(h.set->running() == 1);
  h.set->reload({builtin("job", "noop")});
  CHECK(h.set->running() == 1);  // the old exec is still counted
  h.run(2, "job");
  h.run(3, "gone");
  REQUIRE(h.wait_for(2));
  CHECK(h.results.count(1) == 0);  // still waiting for the gate
  CHECK(h.results[2].ok);
  CHECK(h.results[2].detail == "noop");
  CHECK(h.results[3].detail == "no handler named gone on node n1");
  std::ofstream(gate).put('x');
  REQUIRE(h.wait_for(3));
  CHECK(h.results[1].ok);
  CHECK(h.results[1].detail == "exit status 0\nstdout: old\n");
  CHECK(h.set->running() == 0);
  fs::remove_all(dir);
}

TEST_CASE("HandlerSet: cancel_all drops everything pending, done may call run again") {
  Harness h({builtin("a", "noop"), exec("slow", "sleep 30")});
  SECTION("cancel_all") {
    h.run(1, "a");
    h.run(2, "slow");
    h.run(3, "unknown");
    CHECK(h.set->running() == 3);
    h.set->cancel_all();
    CHECK(h.set->running() == 0);
    h.loop.run_for(50);
    CHECK(h.results.empty());
  }
  SECTION("cancel_all from inside done stops the rest of the batch") {
    int calls = 0;
    for (uint64_t id = 1; id <= 3; ++id) {
      h.set->run(invocation(id, "a"), [&](const node::InvocationResult&) {
        ++calls;
        h.set->cancel_all();
      });
    }
    h.loop.run_for(50);
    CHECK(calls == 1);
  }
  SECTION("chained runs") {
    int calls = 0;
    std::function<void(const node::InvocationResult&)> again = [&](const node::InvocationResult& r) {
      CHECK(r.ok);
      if (++calls < 5) h.set->run(invocation(r.id + 1, "a"), again);
    };
    h.set->run(invocation(1, "a"), again);
    CHECK(h.loop.run_until([&] { return calls == 5; }));
  }
}

TEST_CASE("validate_handler names the problem and the field") {
  HandlerConfig e = exec("job", "true");
  CHECK(validate_handler(e).ok());
  e.timeout_ms = 0;
  CHECK(validate_handler(e).error().field == "handlers.job.timeout");
  e = exec("job", "true");
  e.argv.clear();
  CHECK(validate_handler(e).error().field == "handlers.job.argv");
  e = exec("job", "true");
  e.env = {{"A=B", "x"}};
  CHECK(validate_handler(e).error().field == "handlers.job.env");

  HandlerConfig h;
  h.name = "hook";
  h.kind = HandlerConfig::Kind::kHttp;
  CHECK(validate_handler(h).error().field == "handlers.hook.urls");
  h.urls = {"http://a/x", "HTTPS://b/y"};
  CHECK(validate_handler(h).ok());
  h.headers = {{"Authorization", "Bearer abc"}};
  CHECK(validate_handler(h).ok());
  h.headers = {{"X-Caesium-Entity", "spoof"}};
  CHECK_FALSE(validate_handler(h).ok());
  h.headers = {{"Bad Name", "x"}};
  CHECK_FALSE(validate_handler(h).ok());
  h.headers = {{"X-Ok", "a\r\nInjected: yes"}};
  CHECK_FALSE(validate_handler(h).ok());

  CHECK(validate_handler(builtin("b", "log")).ok());
  CHECK_FALSE(validate_handler(builtin("", "log")).ok());
}

TEST_CASE("invocation presentation: JSON body, headers, UTF-8, redaction, tail buffer") {
  node::Invocation inv = invocation(1, "hook");
  inv.entity = "bad\r\nX-Evil: 1";
  inv.possible_duplicate = true;
  inv.payload = "{\"k\": \"v\"}";
  auto j = nlohmann::json::parse(invocation_json(inv, "n1"));
  CHECK(j["payload"] == "{\"k\": \"v\"}");
  CHECK(j["entity"] == "bad\r\nX-Evil: 1");
  CHECK(j["scheduled"] == "2026-03-29T01:30:00Z");
  CHECK(j["scheduled_ms"] == 1'774'747'800'000);
  CHECK(j["possible_duplicate"] == true);
  CHECK(j["node"] == "n1");
  CHECK_FALSE(j.contains("payload_base64"));
  inv.payload = std::string("\xff\x00\x01", 3);
  inv.volume = "v\xc3";  // truncated UTF-8
  j = nlohmann::json::parse(invocation_json(inv, "n1"));
  CHECK(j["payload_base64"] == "/wAB");
  CHECK_FALSE(j.contains("payload"));
  CHECK(j["volume"] == "v\xEF\xBF\xBD");
  for (const auto& [name, value] : invocation_headers(inv)) {
    CHECK(value.find_first_of("\r\n") == std::string::npos);
    if (name == "X-Caesium-Entity") CHECK(value == "bad%0D%0AX-Evil: 1");
  }

  CHECK(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK(printable_text(std::string("a\0b\n", 4)) == "a\xEF\xBF\xBD" "b\n");

  CHECK(redact_url("https://user:pw@host:8080/p?q=1") == "https://***@host:8080/p?q=1");
  CHECK(redact_url("http://host/p@x") == "http://host/p@x");

  TailBuffer t(4);
  t.append("ab", 2);
  CHECK(t.text() == "ab");
  t.append("cdef", 4);
  CHECK(t.text() == "cdef");
  t.append("g", 1);
  t.append("hi", 2);
  CHECK(t.text() == "fghi");
  CHECK(t.total_bytes() == 9);
  CHECK(t.truncated());
}
