// Scenario TOML: every section and fault kind, errors that name the key and the line,
// [expect] evaluation, swarm derivation, and end-to-end runs through the runner with
// the test process kind "echo".
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "sim/expect.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/swarm.h"
#include "sim_test_process.h"
#include "tests/unit/toml_error_lines.h"

using namespace caesium;
using namespace caesium::sim;

namespace {

const char* kFull = R"(
name = "every fault"
process = "echo"
seed = 9
duration = "10m"
settle = "2m"
heal_at_end = true
epoch = "2026-03-01T00:00:00Z"

[[node]]
id = "n1"
priority = 10
tags = ["ssd", "eu"]
[[node]]
id = "n2"
gossip_addr = "10.0.0.2:7946"
stream_addr = "10.0.0.2:7947"
[[node]]
id = "n3"

[[volume]]
name = "v1"
replicas = ["n1", "n2", "n3"]

[node_options]
probe_interval = "500ms"

[network]
latency = "2ms"
jitter = "1ms"
distribution = "lognormal"
loss = 0.01
duplicate = 0.001
corrupt = 0.0001

[disk]
sync_latency = "3ms"

[clock]
max_skew = "3s"

[workload.handler]
duration = "200ms"
fail = 0.1
slowness = { n2 = 4.0 }

[[workload.entry]]
at = "30s"
via = "n1"
volume = "v1"
entity = "billing"
name = "nightly"
cron = "0 3 * * *"
semantics = "at_most_once"
retry = { max = 3 }

[[fault]]
at = "1m"
partition = [["n1", "n2"], ["n3"]]
[[fault]]
at = "2m"
heal = true
[[fault]]
at = "3m"
cut = [["n1", "n3"]]
[[fault]]
at = "4m"
oneway = { from = "n1", to = "n2" }
[[fault]]
at = "5m"
heal = [["n1", "n3"]]
[[fault]]
at = "6m"
crash = "n2"
[[fault]]
at = "7m"
restart = "n2"
wipe_disk = true
[[fault]]
at = "8m"
skew = { node = "n3", offset = "-2s", drift = 0.0001 }
[[fault]]
at = "8m30s"
slow = { node = "n1", delay = "800ms", for = "1m" }
[[fault]]
at = "9m"
leave = "n3"

[random_faults]
crash_rate = 2
mean_duration = "20s"

[expect]
violations = 0
counters = { "membership.false_deaths" = 0 }
min = { "membership.events.dead" = 1 }
max = { "net.datagram.max_bytes" = 1400 }
)";

// Parses and returns the error message (fails the test if parsing succeeds).
std::string error_of(const std::string& text) {
  auto r = parse_scenario(text, "t.toml");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

const char* kNodes = "[[node]]\nid = \"n1\"\n[[node]]\nid = \"n2\"\n[[node]]\nid = \"n3\"\n";

}  // namespace

TEST_CASE("scenario: every section and every fault kind parse", "[sim]") {
  auto r = parse_scenario(kFull, "full.toml");
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  const Scenario& s = r.value();
  CHECK(s.process == "echo");
  CHECK(s.seed == 9);
  CHECK(s.end_ms() == 12 * kMsPerMinute);
  CHECK(s.heal_at_end);
  CHECK(s.world.epoch_utc_ms == parse_rfc3339_ms("2026-03-01T00:00:00Z").value());
  REQUIRE(s.cluster.nodes.size() == 3);
  CHECK(s.cluster.nodes[0].priority == 10);
  CHECK(s.cluster.nodes[0].tags == std::vector<std::string>{"eu", "ssd"});
  CHECK(s.cluster.nodes[0].gossip_addr == "n1:7946");
  CHECK(s.cluster.nodes[1].stream_addr == "10.0.0.2:7947");
  CHECK(s.node_options->contains("probe_interval"));
  CHECK(s.world.network.latency.base_ms == 2);
  CHECK(s.world.network.latency.shape == Distribution::Shape::kLognormal);
  CHECK(s.world.network.loss == 0.01);
  CHECK(s.world.disk_sync.base_ms == 3);
  CHECK(s.world.max_skew_ms == 3000);
  CHECK(s.world.handler.fail_probability == 0.1);
  CHECK(s.handler_slowness.at("n2") == 4.0);
  REQUIRE(s.workload.size() == 1);
  CHECK(s.workload[0].fields["cron"] == "0 3 * * *");
  CHECK(s.workload[0].fields["retry"]["max"] == 3);
  CHECK_FALSE(s.workload[0].fields.contains("via"));
  REQUIRE(s.faults.size() == 10);
  CHECK(s.faults[0].kind == FaultSpec::Kind::kPartition);
  CHECK(s.faults[0].groups.size() == 2);
  CHECK(s.faults[1].kind == FaultSpec::Kind::kHeal);
  CHECK(s.faults[1].pairs.empty());
  CHECK(s.faults[2].kind == FaultSpec::Kind::kCut);
  CHECK(s.faults[3].kind == FaultSpec::Kind::kOneway);
  CHECK(s.faults[3].pairs[0] == std::make_pair(std::string("n1"), std::string("n2")));
  CHECK(s.faults[4].pairs.size() == 1);
  CHECK(s.faults[6].wipe_disk);
  CHECK(s.faults[7].offset_ms == -2000);
  CHECK(s.faults[7].drift == 0.0001);
  CHECK(s.faults[8].delay_ms == 800);
  CHECK(s.faults[8].for_ms == kMsPerMinute);
  CHECK_FALSE(s.faults[8].inbound_only);
  CHECK(s.faults[9].kind == FaultSpec::Kind::kLeave);
  CHECK(s.random.crash_rate == 2);
  CHECK(s.expect.violations == 0u);
  CHECK(s.expect.checks.size() == 3);
}

TEST_CASE("scenario: the full example runs and meets its expectations", "[sim]") {
  auto s = parse_scenario(kFull, "full.toml");
  REQUIRE(s.ok());
  RunOptions ro;
  ro.seed = 9;
  auto r = run_scenario(s.value(), ro);
  REQUIRE(r.ok());
  INFO(r.value().to_text());
  CHECK(r.value().passed());
  CHECK(r.value().figures.at("sim.faults") >= 10);
  CHECK(r.value().figures.at("handler.executions") == 1);
}

TEST_CASE("scenario errors name the key and its line", "[sim]") {
  const std::string base = std::string("process = \"echo\"\n") + kNodes;
  std::string e = error_of(base + "[network]\nlatencyy = \"2ms\"\n");
  CHECK(e.find("t.toml:9:") != std::string::npos);
  CHECK(e.find("network.latencyy") != std::string::npos);
  CHECK(e.find("unknown key") != std::string::npos);

  e = error_of(base + "[network]\nloss = 1.5\n");
  CHECK(e.find("t.toml:9:") != std::string::npos);
  CHECK(e.find("network.loss") != std::string::npos);

  e = error_of(base + "duration = \"10 minutes\"\n");
  CHECK(e.find("t.toml:8:") != std::string::npos);
  CHECK(e.find("duration") != std::string::npos);

  e = error_of(base + "[[fault]]\nat = \"1m\"\npartition = [[\"n1\"], [\"n9\"]]\n");
  CHECK(e.find("unknown node 'n9'") != std::string::npos);
  CHECK(e.find("t.toml:8:") != std::string::npos);

  e = error_of(base + "[[fault]]\nat = \"1m\"\ncrash = \"n1\"\nheal = true\n");
  CHECK(e.find("exactly one of") != std::string::npos);

  e = error_of(base + "[[fault]]\nat = \"1m\"\ncrash = \"n1\"\nwipe_disk = true\n");
  CHECK(e.find("wipe_disk") != std::string::npos);

  e = error_of(base + "[[fault]]\nat = \"1m\"\nskew = { node = \"n1\", offset = \"1h\" }\n");
  CHECK(e.find("max_skew") != std::string::npos);

  e = error_of(base + "[[fault]]\nat = \"1m\"\nslow = { node = \"n1\", delai = \"1s\" }\n");
  CHECK(e.find("delai") != std::string::npos);
  {
    auto in = parse_scenario(base + "[[fault]]\nat = \"1m\"\nslow = { node = \"n1\", delay = \"1s\", inbound_only = true }\n", "t");
    REQUIRE(in.ok());
    CHECK(in->faults[0].inbound_only);
  }

  e = error_of(base + "[[fault]]\nat = \"99h\"\ncrash = \"n1\"\n");
  CHECK(e.find("after the end of the run") != std::string::npos);

  e = error_of(base + "[[volume]]\nname = \"v\"\nreplicas = [\"n1\", \"n1\"]\n");
  CHECK(e.find("twice") != std::string::npos);

  e = error_of(base + "[[workload.entry]]\nvia = \"n1\"\nvolume = \"nope\"\nentity = \"e\"\nname = \"x\"\n");
  CHECK(e.find("unknown volume 'nope'") != std::string::npos);

  e = error_of(base + "[expect]\nmin = { x = \"high\" }\n");
  CHECK(e.find("expect.min.x") != std::string::npos);

  e = error_of("process = \"echo\"\n[[node]\nid = 1\n");
  CHECK(e.find("t.toml:2:") != std::string::npos);
  CHECK(e.find("TOML syntax") != std::string::npos);

  e = error_of("process = \"echo\"\n");
  CHECK(e.find("no nodes") != std::string::npos);

  CHECK_FALSE(load_scenario("/nonexistent/x.toml").ok());
}

TEST_CASE("scenario: every error of the file is reported, each with file:line:column and the key", "[sim]") {
  const std::string text = std::string("process = \"echo\"\n") +
                           "duration = \"10 minutes\"\n" + kNodes +           // 2; the nodes end on line 8
                           "[network]\nloss = 1.5\nlatencyy = \"2ms\"\n"      // 10, 11
                           "[[volume]]\nname = \"v\"\n"                       // 12: no replicas
                           "[[fault]]\ncrash = \"n1\"\n"                      // 14: no `at`
                           "[[fault]]\nat = \"1m\"\ncrash = 5\n"              // 18
                           "[expect]\nmin = { x = \"high\" }\n";             // 20
  test::check_error_lines(error_of(text), R"(t\.toml)",
                          {"t.toml:2:1: duration: \"10 minutes\" is not a duration",
                           "t.toml:10:1: network.loss: 1.5 is out of range [0, 1]",
                           "t.toml:11:1: network.latencyy: unknown key",
                           "t.toml:12:1: volume[0]: a volume needs a name and replicas",
                           "t.toml:14:1: fault[0]: a fault needs at",
                           "t.toml:18:1: fault[1].crash: expected a string or an array of strings",
                           "t.toml:20:9: expect.min.x: expected a number"});
}

TEST_CASE("[[workload.burst]] expands into one-shot entries spread over the window", "[sim]") {
  const std::string base = std::string("process = \"echo\"\n") + kNodes +
                           "[[volume]]\nname = \"v1\"\nreplicas = [\"n1\", \"n2\"]\n";
  auto s = parse_scenario(base + "[[workload.burst]]\nat = \"5s\"\ncount = 12\nvolume = \"v1\"\nentity = \"b\"\n"
                                 "due = \"10s\"\nwindow = \"1s\"\nsemantics = \"at_most_once\"\n",
                          "t");
  REQUIRE(s.ok());
  REQUIRE(s->workload.size() == 12);
  for (size_t i = 0; i < 12; ++i) {
    const WorkloadEntry& w = s->workload[i];
    CHECK(w.at_ms == 5000);
    CHECK(w.volume == "v1");
    CHECK(w.entity == "b");
    CHECK(w.via == (i % 2 == 0 ? "n1" : "n2"));  // the volume's replicas in turn
    CHECK(w.name == (i < 10 ? "burst0" : "burst") + std::to_string(i));  // zero-padded to the widest
    CHECK(w.fields.at("semantics") == "at_most_once");
    CHECK(w.fields.at("timer").at("after") == std::to_string(10000 + static_cast<int64_t>(i) * 1000 / 12) + "ms");
  }
  // An explicit via list and a prefix.
  s = parse_scenario(base + "[[workload.burst]]\nat = \"1s\"\ncount = 3\nvolume = \"v1\"\nentity = \"b\"\n"
                            "due = \"2s\"\nvia = \"n2\"\nname_prefix = \"x\"\n",
                     "t");
  REQUIRE(s.ok());
  REQUIRE(s->workload.size() == 3);
  CHECK(s->workload[2].via == "n2");
  CHECK(s->workload[2].name == "x2");
  CHECK(s->workload[2].fields.at("timer").at("after") == "2000ms");  // no window: all due together

  const std::string burst = "[[workload.burst]]\nat = \"1s\"\nvolume = \"v1\"\nentity = \"b\"\n";
  CHECK(error_of(base + burst + "count = 3\n").find("due must be a positive duration") != std::string::npos);
  CHECK(error_of(base + burst + "count = 0\ndue = \"1s\"\n").find("count") != std::string::npos);
  CHECK(error_of(base + burst + "count = 3\ndue = \"1s\"\ncron = \"* * * * *\"\n").find("set by the burst") !=
        std::string::npos);
  CHECK(error_of(base + burst + "count = 3\ndue = \"1s\"\nvia = \"n9\"\n").find("unknown node 'n9'") !=
        std::string::npos);
  CHECK(error_of(base + "[[workload.burst]]\nat = \"1s\"\ncount = 3\nvolume = \"nope\"\nentity = \"b\"\n"
                        "due = \"1s\"\n")
            .find("unknown volume 'nope'") != std::string::npos);
}

TEST_CASE("a process kind rejects bad node_options before the run", "[sim]") {
  auto s = parse_scenario(std::string("process = \"echo\"\n") + kNodes +
                              "[node_options]\nprobe_intervall = \"1s\"\n",
                          "t.toml");
  REQUIRE(s.ok());  // node_options belong to the process kind, not the simulator
  auto r = run_scenario(s.value(), RunOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("node_options.probe_intervall") != std::string::npos);

  auto unknown = parse_scenario(std::string("process = \"martian\"\n") + kNodes, "t.toml");
  REQUIRE(unknown.ok());
  auto r2 = run_scenario(unknown.value(), RunOptions{});
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message.find("'martian' is not available") != std::string::npos);
}

TEST_CASE("[expect] evaluation", "[sim]") {
  Report r;
  r.set("a", 3);
  r.set("b", 10);
  Expect ex;
  ex.checks.push_back({"a", Expectation::Op::kEqual, 3, "x:1"});
  ex.checks.push_back({"b", Expectation::Op::kMin, 10, "x:2"});
  ex.checks.push_back({"b", Expectation::Op::kMax, 10, "x:3"});
  evaluate_expect(ex, r);
  CHECK(r.expect_failures.empty());
  CHECK(r.passed());

  Report r2 = r;
  r2.expect_failures.clear();
  Expect bad;
  bad.checks.push_back({"a", Expectation::Op::kEqual, 4, "x:1"});
  bad.checks.push_back({"b", Expectation::Op::kMax, 9, "x:2"});
  bad.checks.push_back({"c", Expectation::Op::kMin, 0, "x:3"});
  evaluate_expect(bad, r2);
  REQUIRE(r2.expect_failures.size() == 3);
  CHECK(r2.expect_failures[0].find("a expected == 4, got 3") != std::string::npos);
  CHECK(r2.expect_failures[2].find("'c' was not reported") != std::string::npos);
  CHECK_FALSE(r2.passed());

  // Violations fail a run unless [expect] names them.
  Report v;
  v.violate({"amo.duplicate", "ran twice", 5, "n1"});
  evaluate_expect(Expect{}, v);
  CHECK_FALSE(v.passed());
  Report w = v;
  Expect kinds;
  kinds.violation_kinds = {"amo.duplicate"};
  evaluate_expect(kinds, w);
  CHECK(w.passed());
  Report x = v;
  Expect other;
  other.violation_kinds = {"alo.missed"};
  evaluate_expect(other, x);
  CHECK_FALSE(x.passed());
  CHECK(x.expect_failures.size() == 2);  // unexpected kind + missing kind
}

TEST_CASE("swarm: every parameter is derived from the seed, deterministically", "[sim]") {
  SwarmOptions o;
  o.process = "echo";
  for (uint64_t seed : {1ULL, 2ULL, 17ULL, 123456789ULL}) {
    INFO("seed " << seed);
    const Scenario a = derive_swarm_scenario(seed, o);
    const Scenario b = derive_swarm_scenario(seed, o);
    CHECK(describe_swarm_scenario(a) == describe_swarm_scenario(b));
    CHECK(a.cluster.volumes.size() == b.cluster.volumes.size());
    CHECK(a.workload.size() == b.workload.size());
    CHECK(a.cluster.nodes.size() >= 3);
    CHECK(a.cluster.nodes.size() <= 7);
    CHECK(a.heal_at_end);
    CHECK(a.random.any());
    CHECK(validate_scenario(a).ok());
  }
  int differing = 0;
  for (uint64_t seed = 1; seed < 10; ++seed) {
    differing += describe_swarm_scenario(derive_swarm_scenario(seed, o)) !=
                 describe_swarm_scenario(derive_swarm_scenario(seed + 1, o));
  }
  CHECK(differing == 9);
  o.nodes = 12;
  o.duration_ms = 3 * kMsPerMinute;
  const Scenario fixed = derive_swarm_scenario(5, o);
  CHECK(fixed.cluster.nodes.size() == 12);
  CHECK(fixed.duration_ms == 3 * kMsPerMinute);
  CHECK(swarm_replay_command(5, o) ==
        "caesium sim --swarm --seeds 5..5 --nodes 12 --duration 3m --process echo");
}

TEST_CASE("runs replay bit for bit: same seed same trace hash, another seed another", "[sim]") {
  SwarmOptions o;
  o.process = "echo";
  o.duration_ms = 2 * kMsPerMinute;
  o.settle_ms = kMsPerMinute;
  const uint64_t seed = caesium::sim::testing::test_seed(31);
  INFO("seed " << seed << " replay: " << swarm_replay_command(seed, o));
  const Scenario s = derive_swarm_scenario(seed, o);
  RunOptions ro;
  ro.seed = seed;
  auto a = run_scenario(s, ro);
  auto b = run_scenario(s, ro);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value().trace_hash == b.value().trace_hash);
  CHECK(a.value().events == b.value().events);
  CHECK(a.value().figures == b.value().figures);
  ro.seed = seed + 1;
  auto c = run_scenario(s, ro);
  REQUIRE(c.ok());
  CHECK(a.value().trace_hash != c.value().trace_hash);
}

TEST_CASE("swarm seeds with the echo process converge after healing", "[sim]") {
  SwarmOptions o;
  o.process = "echo";
  o.duration_ms = 3 * kMsPerMinute;
  o.settle_ms = kMsPerMinute;
  const uint64_t first = caesium::sim::testing::test_seed(1);
  for (uint64_t seed = first; seed < first + 8; ++seed) {
    INFO("replay: " << swarm_replay_command(seed, o));
    RunOptions ro;
    ro.seed = seed;
    auto r = run_scenario(derive_swarm_scenario(seed, o), ro);
    REQUIRE(r.ok());
    INFO(r.value().to_text());
    CHECK(r.value().passed());
    CHECK(r.value().figures.at("convergence.views_ms.count") == 1);
    CHECK(r.value().figures.at("convergence.volumes_never_agreed") == 0);
  }
}

TEST_CASE("the shipped echo scenario file passes", "[sim]") {
  const char* dir = std::getenv("CAESIUM_SOURCE_DIR");
  std::string root = dir ? dir : __FILE__;
  if (!dir) root = root.substr(0, root.rfind("/tests/unit/"));
  auto s = load_scenario(root + "/tests/sim/echo_partition.toml");
  INFO((s.ok() ? "" : s.error().message));
  REQUIRE(s.ok());
  RunOptions ro;
  ro.seed = s.value().seed;
  auto r = run_scenario(s.value(), ro);
  REQUIRE(r.ok());
  INFO(r.value().to_text());
  CHECK(r.value().passed());
}

TEST_CASE("start = \"joined\": every node holds the converged view from the start, with no join traffic", "[sim]") {
  const std::string head = "duration = \"2s\"\n[nodes]\ncount = 8\n";
  auto bad = parse_scenario(head + "start = \"sideways\"\n", "t.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("start must be") != std::string::npos);

  auto joined = parse_scenario(head + "start = \"joined\"\n", "t.toml");
  REQUIRE(joined.ok());
  CHECK(joined->cluster.start_joined);
  auto r = run_scenario(joined.value(), RunOptions{});
  REQUIRE(r.ok());
  CHECK(r->passed());
  CHECK(r->figures.at("membership.events.alive") == 8 * 7);  // each learns the 7 others once
  CHECK(r->figures.at("membership.convergence.startup_ms.max") == 0);
  CHECK(r->figures.at("net.stream.sent") == 0);  // no join push-pulls

  auto seeded = parse_scenario(head, "t.toml");
  REQUIRE(seeded.ok());
  CHECK_FALSE(seeded->cluster.start_joined);
  auto r2 = run_scenario(seeded.value(), RunOptions{});
  REQUIRE(r2.ok());
  CHECK(r2->figures.at("net.stream.sent") > 0);  // joined through seeds
}
