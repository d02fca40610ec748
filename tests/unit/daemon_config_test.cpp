// The daemon's TOML config: every field, defaults, includes, NodeOptions, and errors
// that name the file, the line and the key.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/toml/toml_reader.h"
#include "node/daemon/config/config.h"
#include "schedule/entry_json.h"
#include "tests/unit/toml_error_lines.h"

using namespace caesium;
using namespace caesium::daemon;

namespace {

const char* kMinimal = R"(
node_id = "n1"
data_dir = "data/n1"
key_file = "cluster.key"
gossip_listen = "127.0.0.1:7101"
stream_listen = "127.0.0.1:7102"
)";

const char* kFull = R"(node_id = "n1"
cluster_name = "prod"
data_dir = "/var/lib/caesium"
key_file = "keys/cluster.key"
gossip_listen = "0.0.0.0:7946"
stream_listen = "0.0.0.0:7947"
gossip_advertise = "10.0.0.1:7946"
stream_advertise = "10.0.0.1:7947"
seeds = ["10.0.0.2:7947", "node3.example:7947", "10.0.0.1:7947"]
log_level = "debug"
shutdown_grace = "30s"

[capacity]
cores = 8
memory = "16GiB"
max_running = 32

[cluster]
epoch = 3
[[cluster.node]]
id = "n1"
priority = 100
tags = ["eu", "batch"]
[[cluster.node]]
id = "n2"
[[cluster.volume]]
name = "main"
replicas = ["n2", "n1"]

[[handler]]
name = "script"
kind = "exec"
argv = ["./bin/run.sh", "--fast"]
cwd = "work"
env = { A = "1", B = "two" }
timeout = "45s"

[[handler]]
name = "hook"
kind = "http"
urls = ["http://a.example/hook", "https://b.example/hook"]
headers = { Authorization = "Bearer x" }
timeout = "5s"
max_running = 4

[[handler]]
name = "log"
kind = "builtin"
builtin = "log"

[[entry]]
volume = "main"
entity = "acme"
name = "nightly"
cron = "0 2 * * *"
tz = "Europe/London"
semantics = "at_most_once"
handler = "script"
bind = ["tag:batch"]
misfire_window = "1h"

[api]
listen = "127.0.0.1:8080"
token_file = "api.token"
max_body = "2MiB"
chronos_volume = "main"

[gossip]
probe_interval = "2s"
probe_timeout = "800ms"
indirect_checks = 2
suspicion_mult = 5
suspicion_max_timeout_mult = 4
retransmit_mult = 3
gossip_interval = "300ms"
gossip_nodes = 4
gossip_to_dead = "20s"
push_pull_interval = "1m"
awareness_max_multiplier = 6
load_update_min_interval = "2s"
join_retry_interval = "3s"
dead_reclaim = "12h"
lifeguard = false
sync_interval = "20s"
sync_session_timeout = "40s"
startup_grace = "5s"
heard_recently = "3s"
direct_contact = "7s"
replay_window = "3m"
maintenance_interval = "45s"

[scheduler]
claim_retry = "400ms"
claim_give_up = "4s"
owner_silence = "7s"
misfire_threshold = "20s"
occurrence_retention = "48h"
revoke_retry = "2s"
max_clock_skew = "500ms"
max_backlog_per_entry = 500
terminal_linger = "2m"
prepare_ahead = "5s"

[store]
tombstone_grace = "14d"
max_clock_future = "30s"

[limits]
max_frame = "32MiB"
frame_budget = "8MiB"
send_queue = "4MiB"
max_connections = 256
connect_timeout = "3s"
idle_timeout = "10m"

[storage]
map_size = "1GiB"
max_map_size = "128GiB"
group_commit_delay = "1ms"
)";

}  // namespace

TEST_CASE("config: a minimal file takes the defaults") {
  auto c = parse_config(kMinimal, "/etc/caesium/n1.toml");
  REQUIRE(c.ok());
  CHECK(c->node_id == "n1");
  CHECK(c->cluster_name == "caesium");
  CHECK(c->data_dir == "/etc/caesium/data/n1");  // relative to the config file
  CHECK(c->key_file == "/etc/caesium/cluster.key");
  CHECK(c->gossip_advertise.empty());
  CHECK(c->log_level == LogLevel::kInfo);
  CHECK(c->shutdown_grace_ms == 10'000);
  CHECK(c->capacity.cores >= 1);
  CHECK(c->capacity.memory_mb >= 1);
  CHECK(c->capacity.max_running == 16);
  CHECK(c->tuning.scheduler.running_cap == 0);  // 16 slots advertised, no cap
  CHECK(c->tuning.scheduler.handler_caps.empty());
  CHECK(c->initial_cluster.epoch == 0);
  CHECK(c->handlers.empty());
  CHECK(c->entries.empty());
  CHECK(c->api.listen == "127.0.0.1:0");
  CHECK(c->transport.max_frame_bytes == (size_t{16} << 20));
  CHECK(c->group_commit_max_delay_ms == 0);
  const node::NodeOptions defaults;
  CHECK(c->tuning.membership.probe_interval_ms == defaults.membership.probe_interval_ms);
  CHECK(c->tuning.sync_interval_ms == defaults.sync_interval_ms);
  auto o = node_options(*c, wire::Keyring::single(wire::Key{}));
  CHECK(o.id == "n1");
  CHECK(o.gossip_addr == "127.0.0.1:7101");
  CHECK(o.stream_addr == "127.0.0.1:7102");
  CHECK(o.api_addr.empty());  // port 0: no API
}

TEST_CASE("config: every field") {
  auto c = parse_config(kFull, "/etc/caesium/n1.toml");
  INFO((c.ok() ? std::string() : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->cluster_name == "prod");
  CHECK(c->data_dir == "/var/lib/caesium");
  CHECK(c->key_file == "/etc/caesium/keys/cluster.key");
  CHECK(c->gossip_listen == "0.0.0.0:7946");
  CHECK(c->stream_advertise == "10.0.0.1:7947");
  CHECK(c->log_level == LogLevel::kDebug);
  CHECK(c->shutdown_grace_ms == 30'000);
  CHECK(c->capacity == gossip::Capacity{8, 16 * 1024, 32});
  CHECK(c->tuning.scheduler.running_cap == 32);  // set: also a hard cap
  CHECK(c->tuning.scheduler.handler_caps == std::map<std::string, uint32_t>{{"hook", 4}});
  CHECK(node_options(*c, wire::Keyring::single(wire::Key{})).scheduler.running_cap == 32);
  CHECK(c->initial_cluster.epoch == 3);
  REQUIRE(c->initial_cluster.nodes.size() == 2);
  CHECK(c->initial_cluster.nodes[0].priority == 100);
  CHECK(c->initial_cluster.nodes[0].tags == std::vector<std::string>{"batch", "eu"});
  REQUIRE(c->initial_cluster.volumes.size() == 1);
  CHECK(c->initial_cluster.volumes[0].replicas == std::vector<std::string>{"n1", "n2"});
  CHECK(c->priority == 100);  // this node's [[cluster.node]] entry
  CHECK(c->tags == std::vector<std::string>{"batch", "eu"});

  REQUIRE(c->handlers.size() == 3);
  const auto& exec = c->handlers[0];
  CHECK(exec.kind == HandlerConfig::Kind::kExec);
  CHECK(exec.argv == std::vector<std::string>{"/etc/caesium/bin/run.sh", "--fast"});
  CHECK(exec.cwd == "/etc/caesium/work");
  CHECK(exec.env == std::map<std::string, std::string>{{"A", "1"}, {"B", "two"}});
  CHECK(exec.timeout_ms == 45'000);
  const auto& http = c->handlers[1];
  CHECK(http.kind == HandlerConfig::Kind::kHttp);
  CHECK(http.urls.size() == 2);
  CHECK(http.headers.at("Authorization") == "Bearer x");
  CHECK(http.timeout_ms == 5'000);
  CHECK(c->handlers[2].kind == HandlerConfig::Kind::kBuiltin);
  CHECK(c->handlers[2].builtin == "log");
  CHECK(c->handlers[2].cwd == "/var/lib/caesium");  // empty cwd: the data directory

  CHECK(c->api.listen == "127.0.0.1:8080");
  CHECK(c->api.token_file == "/etc/caesium/api.token");
  CHECK(c->api.max_body_bytes == (size_t{2} << 20));
  CHECK(c->api.chronos_volume == "main");

  const auto& m = c->tuning.membership;
  CHECK(m.probe_interval_ms == 2'000);
  CHECK(m.probe_timeout_ms == 800);
  CHECK(m.indirect_checks == 2);
  CHECK(m.suspicion_mult == 5);
  CHECK(m.suspicion_max_timeout_mult == 4);
  CHECK(m.retransmit_mult == 3);
  CHECK(m.gossip_interval_ms == 300);
  CHECK(m.gossip_nodes == 4);
  CHECK(m.gossip_to_dead_ms == 20'000);
  CHECK(m.push_pull_interval_ms == 60'000);
  CHECK(m.awareness_max_multiplier == 6);
  CHECK(m.load_update_min_interval_ms == 2'000);
  CHECK(m.join_retry_interval_ms == 3'000);
  CHECK(m.dead_reclaim_ms == 12 * kMsPerHour);
  CHECK_FALSE(m.lifeguard);
  CHECK(c->tuning.sync_interval_ms == 20'000);
  CHECK(c->tuning.sync_session_timeout_ms == 40'000);
  CHECK(c->tuning.startup_grace_ms == 5'000);
  CHECK(c->tuning.heard_recently_ms == 3'000);
  CHECK(c->tuning.direct_contact_ms == 7'000);
  CHECK(c->tuning.replay_window_ms == 180'000);
  CHECK(c->tuning.maintenance_interval_ms == 45'000);
  const auto& s = c->tuning.scheduler;
  CHECK(s.claim_retry_ms == 400);
  CHECK(s.claim_give_up_ms == 4'000);
  CHECK(s.owner_silence_ms == 7'000);
  CHECK(s.misfire_threshold_ms == 20'000);
  CHECK(s.occurrence_retention_ms == 48 * kMsPerHour);
  CHECK(s.revoke_retry_ms == 2'000);
  CHECK(s.max_clock_skew_ms == 500);
  CHECK(s.max_backlog_per_entry == 500);
  CHECK(s.terminal_linger_ms == 120'000);
  CHECK(s.prepare_ahead_ms == 5'000);
  CHECK(c->tuning.store.tombstone_grace_ms == 14 * kMsPerDay);
  CHECK(c->tuning.store.max_clock_future_ms == 30'000);
  CHECK(c->transport.max_frame_bytes == (size_t{32} << 20));
  CHECK(c->tuning.max_stream_frame_bytes == (size_t{8} << 20));
  CHECK(c->transport.send_queue_bytes == (size_t{4} << 20));
  CHECK(c->transport.max_connections == 256);
  CHECK(c->transport.connect_timeout_ms == 3'000);
  CHECK(c->transport.idle_timeout_ms == 600'000);
  CHECK(c->storage.map_bytes == (uint64_t{1} << 30));
  CHECK(c->storage.max_map_bytes == (uint64_t{128} << 30));
  CHECK(c->group_commit_max_delay_ms == 1);

  auto o = node_options(*c, wire::Keyring::single(wire::Key{}));
  CHECK(o.cluster_name == "prod");
  CHECK(o.gossip_addr == "10.0.0.1:7946");  // advertised, not the wildcard
  CHECK(o.stream_addr == "10.0.0.1:7947");
  CHECK(o.api_addr == "127.0.0.1:8080");
  CHECK(o.seeds == std::vector<std::string>{"10.0.0.2:7947", "node3.example:7947"});  // not itself
  CHECK(o.initial_config == c->initial_cluster);
  CHECK(o.capacity == c->capacity);
  CHECK(o.membership.probe_interval_ms == 2'000);
}

TEST_CASE("config: static entries become the API's JSON") {
  auto c = parse_config(kFull, "/etc/caesium/n1.toml");
  REQUIRE(c.ok());
  REQUIRE(c->entries.size() == 1);
  const auto& e = c->entries[0];
  CHECK(e.volume == "main");
  CHECK(e.entity == "acme");
  CHECK(e.name == "nightly");
  const auto j = nlohmann::json::parse(e.json);
  CHECK(j == nlohmann::json{{"cron", "0 2 * * *"},       {"tz", "Europe/London"}, {"semantics", "at_most_once"},
                            {"handler", "script"},       {"bind", {"tag:batch"}}, {"misfire_window", "1h"}});
  // Tables become objects (timers).
  auto t = parse_config(std::string(kMinimal) + R"(
[[entry]]
volume = "v"
entity = "e"
name = "t"
handler = "h"
timer = { interval = "20s", repeat_for = "2m" }
)",
                        "/cfg/n1.toml");
  REQUIRE(t.ok());
  CHECK(nlohmann::json::parse(t->entries[0].json)["timer"] == nlohmann::json{{"interval", "20s"}, {"repeat_for", "2m"}});
}

TEST_CASE("config: a static entry may use H, which hashes its entity and name") {
  auto c = parse_config(std::string(kMinimal) + R"(
[[entry]]
volume = "v"
entity = "acme"
name = "report"
handler = "h"
cron = "H H(0-5) * * *"
)",
                        "/cfg/n1.toml");
  REQUIRE(c.ok());
  // The text is kept; the entry built from it (as the runtime does) has acme/report's key.
  const auto& se = c->entries[0];
  CHECK(nlohmann::json::parse(se.json)["cron"] == "H H(0-5) * * *");
  auto entry = caesium::schedule::entry_from_json(nlohmann::json::parse(se.json), se.entity, se.name, 0, "n1");
  REQUIRE(entry.ok());
  const auto& cron = std::get<caesium::schedule::CronTiming>(entry->timing);
  CHECK(cron.expr == caesium::schedule::CronExpr::parse("H H(0-5) * * *", "acme/caesium/schedule/report").value());
  // A bad H names the file, the line and the entry's cron key.
  auto bad = parse_config(std::string(kMinimal) + "[[entry]]\nvolume = \"v\"\nentity = \"e\"\nname = \"n\"\n"
                          "handler = \"h\"\ncron = \"0 0 * * H#2\"\n", "/cfg/n1.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::StartsWith("/cfg/n1.toml:12:1: entry[0].cron: day-of-week at column 10: 'H' cannot be combined"));
}

TEST_CASE("config: a static entry's retry policy is an inline table") {
  // One static entry (its retry on line 13) with `retry` as given.
  auto with_retry = [](const std::string& retry) {
    return parse_config(std::string(kMinimal) + "[[entry]]\nvolume = \"v\"\nentity = \"acme\"\nname = \"report\"\n"
                                                "handler = \"h\"\ncron = \"*/5 * * * *\"\n" + retry + "\n",
                        "/cfg/n1.toml");
  };
  auto c = with_retry(R"(retry = { attempts = 3, backoff = "2s", jitter = 0.25 })");
  REQUIRE(c.ok());
  const auto& se = c->entries[0];
  CHECK(nlohmann::json::parse(se.json)["retry"] ==
        nlohmann::json{{"attempts", 3}, {"backoff", "2s"}, {"jitter", 0.25}});
  auto entry = caesium::schedule::entry_from_json(nlohmann::json::parse(se.json), se.entity, se.name, 0, "n1");
  REQUIRE(entry.ok());
  CHECK(entry->retry == caesium::schedule::RetryPolicy{3, 2'000, 60'000, 250});
  // A [entry.retry] table is the same object.
  auto table = with_retry("[entry.retry]\nattempts = 2\nmax_backoff = \"10m\"");
  REQUIRE(table.ok());
  CHECK(nlohmann::json::parse(table->entries[0].json)["retry"] == nlohmann::json{{"attempts", 2}, {"max_backoff", "10m"}});
  // A bad value names the file, the line of "retry" and the sub-field.
  auto bad = with_retry("retry = { attempts = 3, jitter = 1.5 }");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith("/cfg/n1.toml:13:1: entry[0].retry.jitter: "));
}

TEST_CASE("config: errors name the file, the line and the key") {
  struct Case {
    const char* name;
    std::string text;
    std::string expected;  // a substring of the message
  };
  const std::string m = kMinimal;  // 6 lines; appended text starts on line 7
  const std::vector<Case> cases = {
      {"unknown top-level key", m + "colour = 1\n", "/cfg/n1.toml:7:1: colour: unknown key"},
      {"unknown key in a section", m + "[gossip]\nprobe_intervall = \"1s\"\n",
       "/cfg/n1.toml:8:1: gossip.probe_intervall: unknown key"},
      {"the first unknown key in file order", m + "zebra = 1\napple = 2\n", "/cfg/n1.toml:7:1: zebra: unknown key"},
      {"bad duration", m + "[gossip]\nprobe_interval = \"1x\"\n",
       "/cfg/n1.toml:8:1: gossip.probe_interval: \"1x\" is not a duration"},
      {"duration of the wrong type", m + "shutdown_grace = 5\n", "/cfg/n1.toml:7:1: shutdown_grace: expected a duration"},
      {"string of the wrong type", m + "cluster_name = 5\n", "/cfg/n1.toml:7:1: cluster_name: expected a string"},
      {"address without a port", m + "gossip_advertise = \"localhost\"\n",
       "/cfg/n1.toml:7:1: gossip_advertise: \"localhost\" is not an address: missing ':port'"},
      {"address with a bad port", m + "seeds = [\"10.0.0.1:99999\"]\n", "/cfg/n1.toml:7:1: seeds: \"10.0.0.1:99999\": port 99999"},
      {"bad log level", m + "log_level = \"loud\"\n", "/cfg/n1.toml:7:1: log_level: \"loud\" is not a log level"},
      {"integer out of range", m + "[capacity]\ncores = 0\n", "/cfg/n1.toml:8:1: capacity.cores: 0 is out of range"},
      {"a running cap of 0", m + "[capacity]\nmax_running = 0\n", "/cfg/n1.toml:8:1: capacity.max_running: 0 is out of range"},
      {"a handler's running cap of 0",
       m + "[[handler]]\nname = \"h\"\nkind = \"builtin\"\nbuiltin = \"noop\"\nmax_running = 0\n",
       "handler[0].max_running: 0 is out of range"},
      {"bad size unit", m + "[storage]\nmap_size = \"12XB\"\n",
       "/cfg/n1.toml:8:1: storage.map_size: \"12XB\" has an unknown size unit"},
      {"map larger than its ceiling", m + "[storage]\nmap_size = \"2GiB\"\nmax_map_size = \"1GiB\"\n",
       "/cfg/n1.toml:8:1: storage.map_size: is larger than storage.max_map_size"},
      {"frame budget too close to the frame limit", m + "[limits]\nmax_frame = \"1MiB\"\nframe_budget = \"1MiB\"\n",
       "/cfg/n1.toml:9:1: limits.frame_budget: must be at most half"},
      {"prepare_ahead beyond its bound", m + "[scheduler]\nprepare_ahead = \"11m\"\n",
       "/cfg/n1.toml:8:1: scheduler.prepare_ahead: at most 10m"},
      {"gossip timings that do not fit", m + "[gossip]\nprobe_interval = \"100ms\"\nprobe_timeout = \"1s\"\n",
       "gossip.probe_interval: the gossip timings do not fit together"},
      {"priority belongs to the cluster config", m + "priority = 5\n", "/cfg/n1.toml:7:1: priority: set a node's priority"},
      {"handler kind", m + "[[handler]]\nname = \"x\"\nkind = \"shell\"\n",
       "/cfg/n1.toml:9:1: handler[0].kind: \"shell\" is not a handler kind"},
      {"handler without a kind", m + "[[handler]]\nname = \"x\"\n", "handler[0].kind: is required"},
      {"handler key of another kind", m + "[[handler]]\nname = \"x\"\nkind = \"exec\"\nargv = [\"a\"]\nurls = [\"http://x\"]\n",
       "/cfg/n1.toml:11:1: handler[0].urls: is only for kind = \"http\""},
      {"exec handler without argv", m + "[[handler]]\nname = \"x\"\nkind = \"exec\"\n", "handler[0].argv: an exec handler needs argv"},
      {"http handler with a bad url", m + "[[handler]]\nname = \"x\"\nkind = \"http\"\nurls = [\"ftp://x\"]\n",
       "/cfg/n1.toml:10:1: handler[0].urls: \"ftp://x\" is not an http:// or https:// URL"},
      {"unknown builtin", m + "[[handler]]\nname = \"x\"\nkind = \"builtin\"\nbuiltin = \"sleep\"\n",
       "/cfg/n1.toml:10:1: handler[0].builtin: \"sleep\" is not a builtin handler"},
      {"handler env value not a string", m + "[[handler]]\nname = \"x\"\nkind = \"exec\"\nargv = [\"a\"]\nenv = { A = 1 }\n",
       "/cfg/n1.toml:11:1: handler[0].env: value of 'A' is not a string"},
      {"handler defined twice", m + "[[handler]]\nname = \"x\"\nkind = \"builtin\"\nbuiltin = \"noop\"\n"
                                    "[[handler]]\nname = \"x\"\nkind = \"builtin\"\nbuiltin = \"noop\"\n",
       "/cfg/n1.toml:12:1: handler[1].name: handler \"x\" is defined twice"},
      {"entry with an unknown field", m + "[[entry]]\nvolume = \"v\"\nentity = \"e\"\nname = \"n\"\nhandler = \"h\"\n"
                                         "cron = \"* * * * *\"\ncolour = \"red\"\n",
       "/cfg/n1.toml:13:1: entry[0].colour: unknown field"},
      {"entry with a bad cron", m + "[[entry]]\nvolume = \"v\"\nentity = \"e\"\nname = \"n\"\nhandler = \"h\"\n"
                                     "cron = \"61 * * * *\"\n",
       "/cfg/n1.toml:12:1: entry[0].cron: minute at column 1"},
      {"entry without an entity", m + "[[entry]]\nvolume = \"v\"\nname = \"n\"\nhandler = \"h\"\ncron = \"* * * * *\"\n",
       "entry[0].entity: is required"},
      {"entry in a volume the cluster lacks",
       m + "[cluster]\nepoch = 1\n[[cluster.volume]]\nname = \"main\"\nreplicas = [\"n1\"]\n"
           "[[entry]]\nvolume = \"other\"\nentity = \"e\"\nname = \"n\"\nhandler = \"h\"\ncron = \"* * * * *\"\n",
       "volume \"other\" is not in the cluster config"},
      {"cluster without an epoch", m + "[cluster]\n[[cluster.volume]]\nname = \"main\"\nreplicas = [\"n1\"]\n",
       "cluster.epoch: is required"},
      {"cluster volume without replicas", m + "[cluster]\nepoch = 1\n[[cluster.volume]]\nname = \"main\"\nreplicas = []\n",
       "/cfg/n1.toml:11:1: cluster.volume[0].replicas: must name at least one node"},
      {"cluster node listed twice", m + "[cluster]\nepoch = 1\n[[cluster.node]]\nid = \"a\"\n[[cluster.node]]\nid = \"a\"\n",
       "/cfg/n1.toml:12:1: cluster.node[1].id: node \"a\" is listed twice"},
      {"cluster with a bad volume name", m + "[cluster]\nepoch = 1\n[[cluster.volume]]\nname = \"a b\"\nreplicas = [\"n1\"]\n",
       "cluster:"},
      {"wildcard listen without an advertised address", std::string(R"(node_id = "n1"
data_dir = "d"
key_file = "k"
gossip_listen = "0.0.0.0:7101"
stream_listen = "127.0.0.1:7102"
)"),
       "gossip_advertise: is required when listening on a wildcard address"},
      {"missing node id", std::string(R"(data_dir = "d"
key_file = "k"
gossip_listen = "127.0.0.1:7101"
stream_listen = "127.0.0.1:7102"
)"),
       "node_id: is required"},
      {"TOML syntax error", m + "x = \n", "/cfg/n1.toml:7:"},
  };
  for (const auto& c : cases) {
    INFO("case: " << c.name);
    auto r = parse_config(c.text, "/cfg/n1.toml");
    REQUIRE_FALSE(r.ok());
    INFO("message: " << r.error().message);
    CHECK_THAT(r.error().message, Catch::Contains(c.expected));
  }
  auto bad_id = parse_config(R"(node_id = "n 1"
data_dir = "d"
key_file = "k"
gossip_listen = "127.0.0.1:7101"
stream_listen = "127.0.0.1:7102"
)",
                             "/cfg/n1.toml");
  REQUIRE_FALSE(bad_id.ok());
  CHECK_THAT(bad_id.error().message, Catch::StartsWith("/cfg/n1.toml:1:1: node_id: \"n 1\" is not a valid node id"));
}

TEST_CASE("config: every error of the file is reported, each with file:line:column and the key") {
  // kMinimal is 6 lines; the errors start on line 7, in four sections.
  const std::string text = std::string(kMinimal) +
                           "colour = 1\n"                          // 7
                           "cluster_name = 5\n"                    // 8
                           "[gossip]\n"
                           "probe_interval = \"1x\"\n"            // 10
                           "probe_intervall = \"1s\"\n"           // 11
                           "[storage]\n"
                           "map_size = \"12XB\"\n"                // 13
                           "[[handler]]\nname = \"x\"\nkind = \"shell\"\n";  // 16
  auto r = parse_config(text, "/cfg/n1.toml");
  REQUIRE_FALSE(r.ok());
  const std::vector<std::string> expected = {
      "/cfg/n1.toml:8:1: cluster_name: expected a string",
      "/cfg/n1.toml:16:1: handler[0].kind: \"shell\" is not a handler kind",
      "/cfg/n1.toml:10:1: gossip.probe_interval: \"1x\" is not a duration",
      "/cfg/n1.toml:13:1: storage.map_size: \"12XB\" has an unknown size unit",
      "/cfg/n1.toml:11:1: gossip.probe_intervall: unknown key",
      "/cfg/n1.toml:7:1: colour: unknown key",
  };
  test::check_error_lines(r.error().message, R"(/cfg/n1\.toml)", expected);
  CHECK(test::error_lines(r.error().message).size() == expected.size());
}

TEST_CASE("config: includes share the cluster, handlers and entries") {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "caesium-config-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/common.toml") << R"(
[cluster]
epoch = 2
[[cluster.volume]]
name = "main"
replicas = ["n1"]

[[handler]]
name = "run"
kind = "exec"
argv = ["./run.sh"]

[[entry]]
volume = "main"
entity = "e"
name = "n"
handler = "run"
cron = "* * * * *"
)";
  std::ofstream(dir + "/bad.toml") << "node_id = \"n9\"\n";
  std::ofstream(dir + "/n1.toml") << std::string(kMinimal) << "include = \"common.toml\"\n";
  auto c = load_config(dir + "/n1.toml");
  INFO((c.ok() ? std::string() : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->initial_cluster.epoch == 2);
  REQUIRE(c->handlers.size() == 1);
  CHECK(c->handlers[0].argv[0] == dir + "/run.sh");
  CHECK(c->entries.size() == 1);
  CHECK(c->includes == std::vector<std::string>{dir + "/common.toml"});

  // Node-local keys may not come from an included file.
  std::ofstream(dir + "/n2.toml") << std::string(kMinimal) << "include = [\"bad.toml\"]\n";
  auto bad = load_config(dir + "/n2.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith(dir + "/bad.toml:1:1: node_id: unknown key"));
  // A missing include names the include key.
  std::ofstream(dir + "/n3.toml") << std::string(kMinimal) << "include = \"missing.toml\"\n";
  auto missing = load_config(dir + "/n3.toml");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("n3.toml:7:1: include: cannot read config file"));
  // The cluster may be defined once only.
  std::ofstream(dir + "/n4.toml") << std::string(kMinimal) << "include = \"common.toml\"\n[cluster]\nepoch = 1\n";
  auto twice = load_config(dir + "/n4.toml");
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.error().message, Catch::Contains("cluster: defined in more than one file"));
  fs::remove_all(dir);
}

TEST_CASE("config: a missing file is an error") {
  auto c = load_config("/nonexistent/caesium.toml");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::Contains("/nonexistent/caesium.toml"));
}

TEST_CASE("config: sizes") {
  CHECK(*parse_size_bytes("0") == 0);
  CHECK(*parse_size_bytes("512B") == 512);
  CHECK(*parse_size_bytes("64KiB") == 64 * 1024);
  CHECK(*parse_size_bytes("16MiB") == (uint64_t{16} << 20));
  CHECK(*parse_size_bytes("1GB") == (uint64_t{1} << 30));
  CHECK(*parse_size_bytes("2TiB") == (uint64_t{2} << 40));
  CHECK_FALSE(parse_size_bytes("").ok());
  CHECK_FALSE(parse_size_bytes("MiB").ok());
  CHECK_FALSE(parse_size_bytes("1.5GiB").ok());
  CHECK_FALSE(parse_size_bytes("99999999999999999999").ok());
  CHECK_FALSE(parse_size_bytes("20000000TiB").ok());
}

TEST_CASE("config: [notify] names a handler of the node, its events and withheld_after") {
  const std::string handler = "[[handler]]\nname = \"pager\"\nkind = \"exec\"\nargv = [\"/bin/true\"]\n";
  auto c = parse_config(std::string(kMinimal) + handler +
                            "[notify]\nhandler = \"pager\"\nevents = [\"failed\", \"lost\"]\nwithheld_after = \"5m\"\n",
                        "/cfg/n1.toml");
  REQUIRE(c.ok());
  const node::NotifyOptions& n = c->tuning.notify;
  CHECK(n.handler == "pager");
  CHECK(n.failed);
  CHECK(n.lost);
  CHECK_FALSE(n.missed);
  CHECK_FALSE(n.withheld);
  CHECK(n.withheld_after_ms == 300'000);
  // Without [notify] nothing is notified cluster-wide; the events default to all four.
  auto none = parse_config(kMinimal, "/cfg/n1.toml");
  REQUIRE(none.ok());
  CHECK(none->tuning.notify.handler.empty());
  auto all = parse_config(std::string(kMinimal) + handler + "[notify]\nhandler = \"pager\"\n", "/cfg/n1.toml");
  REQUIRE(all.ok());
  CHECK((all->tuning.notify.failed && all->tuning.notify.missed && all->tuning.notify.lost && all->tuning.notify.withheld));
  CHECK(all->tuning.notify.withheld_after_ms == 60'000);
  // Errors name the key.
  auto error = [&](const std::string& section) {
    auto r = parse_config(std::string(kMinimal) + handler + section, "/cfg/n1.toml");
    return r.ok() ? std::string("(accepted)") : r.error().message;
  };
  CHECK_THAT(error("[notify]\nevents = [\"failed\"]\n"), Catch::Contains("notify.handler: is required"));
  CHECK_THAT(error("[notify]\nhandler = \"nobody\"\n"), Catch::Contains("notify.handler: \"nobody\" is not a [[handler]]"));
  CHECK_THAT(error("[notify]\nhandler = \"pager\"\nevents = [\"exploded\"]\n"),
             Catch::Contains("notify.events: unknown event \"exploded\""));
  CHECK_THAT(error("[notify]\nhandler = \"pager\"\nwithheld_after = \"10ms\"\n"), Catch::Contains("notify.withheld_after"));
  CHECK_THAT(error("[notify]\nhandler = \"pager\"\ncolour = 1\n"), Catch::Contains("notify.colour: unknown key"));
}

TEST_CASE("config: a static entry may name an on_failure handler") {
  auto c = parse_config(std::string(kMinimal) +
                            "[[entry]]\nvolume = \"v\"\nentity = \"acme\"\nname = \"report\"\nhandler = \"h\"\n"
                            "cron = \"*/5 * * * *\"\non_failure = \"pager\"\n",
                        "/cfg/n1.toml");
  REQUIRE(c.ok());
  const auto& se = c->entries[0];
  auto entry = caesium::schedule::entry_from_json(nlohmann::json::parse(se.json), se.entity, se.name, 0, "n1");
  REQUIRE(entry.ok());
  CHECK(entry->on_failure == "pager");
  auto bad = parse_config(std::string(kMinimal) +
                              "[[entry]]\nvolume = \"v\"\nentity = \"acme\"\nname = \"report\"\nhandler = \"h\"\n"
                              "cron = \"*/5 * * * *\"\non_failure = 7\n",
                          "/cfg/n1.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("on_failure"));
}
