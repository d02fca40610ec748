// The /metrics page: occurrence counts from fire events, the Prometheus text format
// (every sample declared, values numeric, histograms cumulative with +Inf = count,
// label escaping), and gauges read from a real Node core.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <sstream>

#include "node/daemon/metrics/metrics.h"
#include "schedule/entry_json.h"
#include "tests/unit/daemon_api_fixture.h"

using namespace caesium;
using namespace caesium::daemon;

namespace {

schedule::FireEvent fire(schedule::FireEvent::Kind kind, bool amo = false,
                         schedule::FirePath path = schedule::FirePath::kQuorum, int64_t lateness_ms = 0,
                         uint32_t attempt = 1, bool ok = true) {
  schedule::FireEvent e;
  e.kind = kind;
  e.at_most_once = amo;
  e.path = path;
  e.lateness_ms = lateness_ms;
  e.attempt = attempt;
  e.ok = ok;
  return e;
}

// Checks the exposition format line by line; returns samples as "name{labels}" -> value.
std::map<std::string, double> check_format(const std::string& text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
  static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram))");
  static const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+))");
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    INFO(line);
    if (std::regex_match(line, m, help)) continue;
    if (std::regex_match(line, m, type)) {
      CHECK(types.emplace(m[1], m[2]).second);  // each family declared once
      continue;
    }
    REQUIRE(std::regex_match(line, m, sample));
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (types.count(family) == 0 && family.size() > s.size() && family.substr(family.size() - s.size()) == s) {
        family.resize(family.size() - s.size());
      }
    }
    CHECK(types.count(family) == 1);  // declared before its samples
    const std::string value = m[3];
    double v = 0;
    if (value == "+Inf") v = 1e308;
    else v = std::stod(value);
    CHECK(samples.emplace(std::string(m[1]) + std::string(m[2]), v).second);  // no duplicate series
  }
  return samples;
}

}  // namespace

TEST_CASE("metrics: fire events counted by semantics and path, duplicates, lateness buckets") {
  using K = schedule::FireEvent::Kind;
  using P = schedule::FirePath;
  FireMetrics f;
  f.on_fire(fire(K::kOwned, true, P::kQuorum));
  f.on_fire(fire(K::kOwned, false, P::kDegraded));
  f.on_fire(fire(K::kOwned, false, P::kTakeover));
  f.on_fire(fire(K::kOwned, false, P::kTakeover));
  // Dispatches are counted; lateness is the handler's start on this node (kStarted): a
  // prepared dispatch leaves before the fire time, so its own lateness says nothing.
  f.on_fire(fire(K::kDispatched, false, P::kQuorum, -5'000));
  f.on_fire(fire(K::kDispatched, false, P::kQuorum, 7));
  f.on_fire(fire(K::kDispatched, false, P::kQuorum, 0));
  f.on_fire(fire(K::kDispatched, false, P::kQuorum, 0));
  f.on_fire(fire(K::kStarted, false, P::kQuorum, 3));
  f.on_fire(fire(K::kStarted, false, P::kQuorum, 30));
  f.on_fire(fire(K::kStarted, false, P::kQuorum, 120'000));
  f.on_fire(fire(K::kStarted, false, P::kQuorum, -5));  // counted as on time
  f.on_fire(fire(K::kAccepted, false, P::kQuorum, 0, 1));
  f.on_fire(fire(K::kAccepted, false, P::kQuorum, 0, 2));
  f.on_fire(fire(K::kCompleted, false, P::kQuorum, 0, 1, true));
  f.on_fire(fire(K::kCompleted, false, P::kQuorum, 0, 2, false));
  for (K k : {K::kWithheld, K::kMissed, K::kLost, K::kLost, K::kSkipped, K::kDue, K::kGranted, K::kRedispatched}) {
    f.on_fire(fire(k));
  }
  const auto& c = f.counts();
  CHECK(c.fired[1][0] == 1);
  CHECK(c.fired[0][1] == 1);
  CHECK(c.fired[0][2] == 2);
  CHECK(c.fired[0][0] == 0);
  CHECK(c.dispatched == 4);
  CHECK(c.duplicate_runs == 1);
  CHECK(c.accepted == 2);
  CHECK(c.completed_ok == 1);
  CHECK(c.completed_failed == 1);
  CHECK(c.lost == 2);
  CHECK(c.withheld == 1);
  CHECK(c.lateness_count == 4);
  CHECK(c.lateness_sum_ms == 3 + 30 + 120'000);
  CHECK(c.lateness[0] == 1);       // <= 1 ms (the negative one)
  CHECK(c.lateness[2] == 1);       // <= 5 ms
  CHECK(c.lateness[5] == 1);       // <= 50 ms
  CHECK(c.lateness.back() == 1);   // above 60 s
}

TEST_CASE("metrics: the page is valid exposition format with the node's gauges") {
  test::ApiTestNode n;
  const char* entry = R"({"timer": {"after": "1h"}, "handler": "tick"})";
  for (const char* name : {"a", "b"}) {
    auto e = schedule::entry_from_json(nlohmann::json::parse(entry), "acme", name, n.clock().utc_ms, "n1");
    REQUIRE(e.ok());
    REQUIRE(n.node().put_entry("v", *e, n.clock()).ok());
  }
  FireMetrics f;
  f.on_fire(fire(schedule::FireEvent::Kind::kOwned, true, schedule::FirePath::kQuorum));
  f.on_fire(fire(schedule::FireEvent::Kind::kDispatched, true, schedule::FirePath::kQuorum, 7));
  f.on_fire(fire(schedule::FireEvent::Kind::kStarted, true, schedule::FirePath::kQuorum, 7));
  DaemonMetrics d;
  d.storage.commits = 4;
  d.storage.commit_latency.observe(80);
  d.storage.commit_latency.observe(3'000);
  d.storage.commit_latency.observe(20'000'000);
  ApiCounters api;
  api.responses_by_status = {{200, 3}, {401, 1}};
  api.auth_failures = 1;
  HttpServerStats http;
  http.open_connections = 2;
  MetricsInputs in;
  in.node = &n.node();
  in.fire = &f;
  in.daemon = &d;
  in.api = &api;
  in.http = &http;
  const std::string text = render_metrics(in);
  auto s = check_format(text);
  CHECK(s.at(R"(caesium_node_info{node="n1"})") == 1);
  CHECK(s.at(R"(caesium_volume_entries{volume="v"})") == 2);
  CHECK(s.count(R"(caesium_volume_entries{volume="far"})") == 0);  // not a replica
  CHECK(s.at(R"(caesium_volume_replica{volume="far"})") == 0);
  CHECK(s.at(R"(caesium_volume_replica{volume="v"})") == 1);
  CHECK(s.count(R"(caesium_volume_master{volume="v"})") == 1);
  CHECK(s.at(R"(caesium_members{state="alive"})") == 1);
  CHECK(s.at(R"(caesium_occurrences_fired_total{path="quorum",semantics="at_most_once"})") == 1);
  CHECK(s.at(R"(caesium_occurrences_fired_total{path="degraded",semantics="at_least_once"})") == 0);
  CHECK(s.at(R"(caesium_fire_lateness_seconds_bucket{le="0.005"})") == 0);
  CHECK(s.at(R"(caesium_fire_lateness_seconds_bucket{le="0.01"})") == 1);
  CHECK(s.at(R"(caesium_fire_lateness_seconds_bucket{le="+Inf"})") == 1);
  CHECK(s.at("caesium_fire_lateness_seconds_sum") == Approx(0.007));
  CHECK(s.at(R"(caesium_storage_commit_latency_seconds_bucket{le="0.0001"})") == 1);
  CHECK(s.at(R"(caesium_storage_commit_latency_seconds_bucket{le="0.0025"})") == 1);
  CHECK(s.at(R"(caesium_storage_commit_latency_seconds_bucket{le="0.005"})") == 2);
  CHECK(s.at(R"(caesium_storage_commit_latency_seconds_bucket{le="10"})") == 2);
  CHECK(s.at(R"(caesium_storage_commit_latency_seconds_bucket{le="+Inf"})") == 3);
  CHECK(s.at("caesium_storage_commit_latency_seconds_count") == 3);
  CHECK(s.at(R"(caesium_api_responses_total{code="401"})") == 1);
  CHECK(s.at("caesium_api_auth_failures_total") == 1);
  CHECK(s.at("caesium_http_connections_open") == 2);
  CHECK(s.count(R"(caesium_gossip_datagrams_total{direction="out"})") == 1);
  CHECK(s.count("caesium_frame_auth_failures_total") == 1);
  CHECK(s.count("caesium_frame_replays_total") == 1);
  CHECK(s.count(R"(caesium_handler_runs_total{result="ok"})") == 1);
  // The same state renders the same text.
  CHECK(render_metrics(in) == text);
  // Only the node: the optional sections are left out, the rest is still valid.
  MetricsInputs bare;
  bare.node = &n.node();
  auto b = check_format(render_metrics(bare));
  CHECK(b.count("caesium_api_auth_failures_total") == 0);
  CHECK(b.count("caesium_config_epoch") == 1);
}

TEST_CASE("metrics: label values are escaped, numbers print plainly") {
  PromWriter w;
  w.family("x", "gauge", "help");
  w.sample("x", {{"v", "a\"b\\c\nd"}}, 1.5);
  w.sample("x", {{"v", "big"}}, 12345678901.0);
  CHECK(w.text() == "# HELP x help\n# TYPE x gauge\nx{v=\"a\\\"b\\\\c\\nd\"} 1.5\nx{v=\"big\"} 12345678901\n");
  CHECK(PromWriter::format_value(0.0001) == "0.0001");
}

TEST_CASE("metrics: entry counting skips other entity records and stops at occurrence records") {
  schedule::VolumeStore store("v", "n1");
  store.put("acme/caesium/schedule/a", "x", 1);
  store.put("acme/state/thing", "x", 1);
  store.put("beta/caesium/schedule/b", "x", 1);
  store.put("~occ/acme/a/0000000000000001/m/n1", "x", 1);
  store.erase("beta/caesium/schedule/b", 2);
  CHECK(count_entries(store) == 1);
}
