// Three daemon runtimes in one process on loopback (one libuv loop, real sockets, real
// LMDB, real executors): they converge, fire entries of both semantics exactly once
// while healthy, survive a restart with their data, refuse a foreign data directory,
// and shut down cleanly.  Set CAESIUM_TEST_LOGS=1 to see the nodes' log lines.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "node/daemon/runtime/runtime.h"
#include "schedule/entry.h"
#include "tests/unit/daemon_exec_test_loop.h"
#include "tests/unit/daemon_test_support.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::free_port;
namespace fs = std::filesystem;

namespace {

// A cluster's files: a key, and one config per node (ports picked now).
struct ClusterFiles {
  test::TempDir tmp{"caesium-rt"};
  std::string dir = tmp.path;
  std::vector<std::string> ids = {"n1", "n2", "n3"};
  std::map<std::string, std::string> gossip, stream, api;

  ClusterFiles() {
    std::ofstream(dir + "/cluster.key") << "primary = AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
    fs::permissions(dir + "/cluster.key", fs::perms::owner_read | fs::perms::owner_write);
    std::ofstream(dir + "/api.token") << "secret-token\n";
    for (const auto& id : ids) {
      gossip[id] = "127.0.0.1:" + std::to_string(free_port(SOCK_DGRAM));
      stream[id] = "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));
      api[id] = "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));
    }
  }
  DaemonConfig config(const std::string& id, const std::string& data_of = {}) const {
    std::string seeds;
    for (const auto& other : ids) {
      if (other != id) seeds += (seeds.empty() ? "\"" : ", \"") + stream.at(other) + "\"";
    }
    const std::string text = "node_id = \"" + id + "\"\n" + "cluster_name = \"test\"\n" + "data_dir = \"data-" +
                             (data_of.empty() ? id : data_of) + "\"\n" + "key_file = \"cluster.key\"\n" +
                             "gossip_listen = \"" + gossip.at(id) + "\"\n" + "stream_listen = \"" + stream.at(id) +
                             "\"\n" + "seeds = [" + seeds + "]\n" + "shutdown_grace = \"2s\"\n" + "[api]\nlisten = \"" +
                             api.at(id) + "\"\ntoken_file = \"api.token\"\n" + R"(
[gossip]
probe_interval = "200ms"
probe_timeout = "100ms"
gossip_interval = "100ms"
startup_grace = "500ms"
sync_interval = "1s"

[cluster]
epoch = 1
[[cluster.volume]]
name = "main"
replicas = ["n1", "n2", "n3"]

[[handler]]
name = "noop"
kind = "builtin"
builtin = "noop"

[[handler]]
name = "log"
kind = "builtin"
builtin = "log"

[[entry]]
volume = "main"
entity = "demo"
name = "alo"
cron = "* * * * * *"
semantics = "at_least_once"
handler = "noop"

[[entry]]
volume = "main"
entity = "demo"
name = "amo"
cron = "* * * * * *"
semantics = "at_most_once"
handler = "log"
)";
    auto c = parse_config(text, dir + "/" + id + ".toml");
    INFO((c.ok() ? std::string() : c.error().message));
    REQUIRE(c.ok());
    return *c;
  }
};

RuntimeOptions quiet_options() {
  RuntimeOptions o;
  if (std::getenv("CAESIUM_TEST_LOGS") == nullptr) o.log_sink = [](std::string_view) {};
  return o;
}

std::unique_ptr<Runtime> start(uv_loop_t* loop, const DaemonConfig& config) {
  auto rt = Runtime::start(loop, config, quiet_options());
  INFO((rt.ok() ? std::string() : rt.error().message));
  REQUIRE(rt.ok());
  return std::move(*rt);
}

bool all_alive(const Runtime& rt, size_t n) {
  size_t alive = 0;
  for (const auto& m : rt.node().membership().members()) alive += m.state == gossip::MemberState::kAlive ? 1 : 0;
  return alive == n;
}

// Occurrences of `name` whose handler ran, by scheduled instant: how many runs each.
std::map<int64_t, int> runs(const Runtime& rt, const std::string& name) {
  std::map<int64_t, int> out;
  for (const auto& h : rt.node().history("main", "demo", name, 1000)) {
    int ran_count = 0;
    for (const auto& [fire_id, w] : h.workers) ran_count += schedule::ran(w.state) ? 1 : 0;
    if (ran_count > 0) out[h.occ.scheduled_utc_ms] = ran_count;
  }
  return out;
}

// One HTTP/1.1 request over a plain socket while the loop serves it; the raw answer.
std::string http_get(test::TestLoop& loop, const std::string& addr, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1))));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\n"
                          "Connection: close\r\n\r\n";
  REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string answer;
  bool eof = false;
  REQUIRE(loop.run_until([&] {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        answer.append(buf, static_cast<size_t>(n));
        continue;
      }
      eof = n == 0;
      return eof;
    }
  }));
  ::close(fd);
  return answer;
}

void stop(test::TestLoop& loop, std::unique_ptr<Runtime>& rt) {
  rt->shutdown();
  REQUIRE(loop.run_until([&] { return rt->stopped(); }, 30'000));
  rt.reset();
}

}  // namespace

TEST_CASE("runtime: three nodes converge, fire once each, restart with their data, stop cleanly") {
  ClusterFiles files;
  test::TestLoop loop;
  std::map<std::string, std::unique_ptr<Runtime>> nodes;
  for (const auto& id : files.ids) nodes[id] = start(loop.get(), files.config(id));

  REQUIRE(loop.run_until([&] {
    for (auto& [id, rt] : nodes) {
      if (!all_alive(*rt, 3)) return false;
    }
    return true;
  }, 30'000));
  // Every node agrees on the master of the volume.
  for (auto& [id, rt] : nodes) {
    INFO("node " << id);
    CHECK(rt->node().master_of("main") == nodes.begin()->second->node().master_of("main"));
  }

  // Both entries fire; with no faults every occurrence runs exactly once (replicas
  // learn of every run through the volume store, so any node's history shows all).
  REQUIRE(loop.run_until([&] {
    const auto& n1 = *nodes["n1"];
    return runs(n1, "alo").size() >= 3 && runs(n1, "amo").size() >= 3;
  }, 30'000));
  for (const char* name : {"alo", "amo"}) {
    for (const auto& [t, count] : runs(*nodes["n1"], name)) {
      INFO(name << " at " << t);
      CHECK(count == 1);
    }
  }
  // The executors reported those runs back (a run is recorded when accepted, so the
  // results may trail the history a little).
  REQUIRE(loop.run_until([&] {
    uint64_t finished = 0;
    for (auto& [id, rt] : nodes) finished += rt->metrics().invocations_finished;
    return finished >= 6;
  }, 30'000));
  CHECK(nodes["n1"]->metrics().storage.commits > 0);
  CHECK(nodes["n1"]->metrics().transport.frames_out > 0);

  // Inputs are drained once per loop iteration, in its check phase.  One that arrives
  // outside the I/O phase (the builtin handlers finish from a timer callback) must not
  // leave the poll of that iteration blocking until some unrelated event: while a drain
  // is pending, the loop's poll timeout is zero.
  {
    struct Probe {
      Runtime* rt = nullptr;
      int timeout = -2;
    } probe;
    probe.rt = nodes["n1"].get();
    auto* t = new uv_timer_t();
    uv_timer_init(loop.get(), t);
    t->data = &probe;
    uv_timer_start(t, [](uv_timer_t* h) {
      auto* p = static_cast<Probe*>(h->data);
      p->rt->request_drain();
      p->timeout = uv_backend_timeout(h->loop);
      uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* c) { delete reinterpret_cast<uv_timer_t*>(c); });
    }, 0, 0);
    REQUIRE(loop.run_until([&] { return probe.timeout != -2; }));
    CHECK(probe.timeout == 0);
  }

  // The API is served from the same loop: status, and the metrics page with the
  // daemon's own counters.
  CHECK(nodes["n2"]->api_address() == files.api.at("n2"));
  const std::string status = http_get(loop, files.api.at("n2"), "/v1/status");
  CHECK_THAT(status, Catch::StartsWith("HTTP/1.1 200"));
  CHECK_THAT(status, Catch::Contains("\"n2\""));
  const std::string metrics = http_get(loop, files.api.at("n2"), "/metrics");
  CHECK_THAT(metrics, Catch::StartsWith("HTTP/1.1 200"));
  CHECK_THAT(metrics, Catch::Contains("caesium_storage_commits_total"));

  // n3 restarts with its data directory: the entries are there before any sync.
  stop(loop, nodes["n3"]);
  nodes["n3"] = start(loop.get(), files.config("n3"));
  CHECK(nodes["n3"]->node().get_entry("main", "demo", "amo").has_value());
  REQUIRE(loop.run_until([&] { return all_alive(*nodes["n1"], 3) && all_alive(*nodes["n3"], 3); }, 30'000));

  for (auto& [id, rt] : nodes) stop(loop, rt);
  CHECK(loop.drain());
}

TEST_CASE("runtime: start refuses another node's data directory, a bad key, a taken port") {
  ClusterFiles files;
  test::TestLoop loop;
  {
    auto n1 = start(loop.get(), files.config("n1"));
    stop(loop, n1);
  }
  // n2 pointed at n1's data.
  auto wrong = Runtime::start(loop.get(), files.config("n2", "n1"), quiet_options());
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.error().message, Catch::Contains("belongs to node 'n1'"));

  auto bad_key = files.config("n2");
  std::ofstream(files.dir + "/bad.key") << "primary = not-base64\n";
  bad_key.key_file = files.dir + "/bad.key";
  auto r = Runtime::start(loop.get(), bad_key, quiet_options());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("bad.key"));

  auto n2 = start(loop.get(), files.config("n2"));
  auto clash = files.config("n3");
  clash.stream_listen = files.stream.at("n2");
  auto c = Runtime::start(loop.get(), clash, quiet_options());
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::Contains(files.stream.at("n2")));
  stop(loop, n2);
  CHECK(loop.drain());
}

TEST_CASE("runtime: a key file readable by others is used with a warning") {
  ClusterFiles files;
  fs::permissions(files.dir + "/cluster.key", fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  std::string warning;
  auto ring = read_key_file(files.dir + "/cluster.key", &warning);
  REQUIRE(ring.ok());
  CHECK_THAT(warning, Catch::Contains("chmod 600"));
  auto missing = read_key_file(files.dir + "/nope.key", &warning);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("caesium keygen"));
}
