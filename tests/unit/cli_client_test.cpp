// The `caesium` client commands with a fake transport: argument handling (usage errors
// exit 2), where the address and token come from (flags > environment > config file),
// the requests each command sends, error reporting (401, 404, unreachable: exit 1),
// --json, paging with --all, and the tables.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node/cli/client.h"
#include "tests/unit/cli_run.h"

using namespace caesium;
using namespace caesium::cli;
using nlohmann::json;

namespace {

struct Sent {
  std::string method, path, body;
};

struct FakeApi {
  std::vector<Sent> sent;
  std::vector<ClientResponse> answers;  // consumed in order; the last one repeats
  ClientTarget target;
  std::map<std::string, std::string> env;

  ConnectFn connect() {
    return [this](const ClientTarget& t, int64_t) -> ClientTransport {
      target = t;
      return [this](const std::string& m, const std::string& p, const std::string& b) {
        sent.push_back({m, p, b});
        ClientResponse r = answers.empty() ? ClientResponse{true, 200, "{}", ""} : answers.front();
        if (answers.size() > 1) answers.erase(answers.begin());
        return r;
      };
    };
  }
  struct Run {
    int status;
    std::string out, err;
  };
  // `caesium <command> <words...>`, in-process.
  Run run(const std::string& command, std::vector<std::string> words) {
    words.insert(words.begin(), command);
    test::FakeCli cli;
    cli.env = env;
    cli.connect = connect();
    const test::CliRun r = cli.run(words);
    return {r.status, r.out, r.err};
  }
};

ClientResponse answer(long status, const json& body) { return ClientResponse{true, status, body.dump(), ""}; }

// A temporary directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("caesium-cli-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

const json kEntry = {{"entity", "acme"}, {"name", "report"}, {"key", "acme/caesium/schedule/report"},
                     {"timer", {{"interval", "20s"}, {"repeat_for", "2m"}}}, {"handler", "tick"},
                     {"semantics", "at_least_once"}, {"bind", json::array()}, {"next", "2026-03-20T09:47:00Z"},
                     {"created", "2026-03-20T09:46:40Z"}, {"origin", "n1"}, {"payload", "hi"}};

}  // namespace

TEST_CASE("cli: usage errors exit 2 with the usage line") {
  FakeApi f;
  f.env["CAESIUM_API"] = "127.0.0.1:7400";
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"v", "acme"},                                          // missing NAME
           {"v", "acme", "x", "extra", "--cron", "* * * * *"},      // extra positional
           {"v", "acme", "x", "--colour", "red"},                  // unknown option
           {"v", "acme", "x", "--cron"},                           // no value
           {"v", "acme", "x", "--handler", "h"},                   // no timing
           {"v", "acme", "x", "--cron", "* * * * *", "--interval", "5s"},
           {"v", "acme", "x", "--interval", "5s", "--count", "many"},
           {"v", "acme", "x", "--data", "{}", "--cron", "* * * * *"},
           {"v", "acme", "x", "--cron", "a", "--cron", "b"},
           {"v", "acme", "x", "--cron", "* * * * *", "--timeout", "soon"},
           {"v", "acme", "x", "--json=yes", "--cron", "* * * * *"}}) {
    auto r = f.run("put", words);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("caesium put: ", 0) == 0);
  }
  CHECK(f.sent.empty());
  CHECK(f.run("config", {"apply"}).status == 2);
  CHECK(f.run("config", {"frobnicate"}).status == 2);
  CHECK(f.run("nope", {}).status == 2);
  CHECK(f.run("get", {"--help"}).status == 0);
}

TEST_CASE("cli: no address anywhere is a usage error naming the three ways") {
  FakeApi f;
  auto r = f.run("status", {});
  CHECK(r.status == 2);
  CHECK(r.err.find("--api HOST:PORT") != std::string::npos);
  CHECK(r.err.find("$CAESIUM_API") != std::string::npos);
}

TEST_CASE("cli: flags beat the environment, which beats the config file") {
  TempDir d;
  const std::string token_file = d.write("token", "  from-file\n");
  const std::string config = d.write("node.toml", "node_id = \"n1\"\ndata_dir = \"data\"\nkey_file = \"k\"\n"
                                                  "gossip_listen = \"127.0.0.1:7111\"\nstream_listen = \"127.0.0.1:7112\"\n"
                                                  "[api]\nlisten = \"0.0.0.0:7113\"\ntoken_file = \"token\"\n");
  FakeApi f;
  REQUIRE(f.run("status", {"--config", config}).status == 0);
  CHECK(f.target.base_url == "http://127.0.0.1:7113");  // a wildcard listen address means loopback here
  CHECK(f.target.token == "from-file");
  f.env["CAESIUM_API"] = "10.0.0.1:9";
  f.env["CAESIUM_TOKEN"] = "from-env";
  REQUIRE(f.run("status", {"--config", config}).status == 0);
  CHECK(f.target.base_url == "http://10.0.0.1:9");
  CHECK(f.target.token == "from-env");
  REQUIRE(f.run("status", {"--config", config, "--api", "http://h:1/", "--token-file", token_file}).status == 0);
  CHECK(f.target.base_url == "http://h:1");
  CHECK(f.target.token == "from-file");
  CHECK(f.run("status", {"--api", "h:1", "--token-file", d.write("empty", " \n")}).status == 2);
  CHECK(f.run("status", {"--config", (d.path / "missing.toml").string()}).status == 2);
}

TEST_CASE("cli: a token or address with a control character is refused before anything is sent") {
  TempDir d;
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  f.env["CAESIUM_TOKEN"] = "abc\r\nX-Injected: 1";
  auto r = f.run("status", {});
  CHECK(r.status == 2);
  CHECK(r.err.find("control character") != std::string::npos);
  CHECK(r.err.find("X-Injected") == std::string::npos);  // the token is not echoed
  f.env.erase("CAESIUM_TOKEN");
  // In a file: the line break is inside the token, not around it (that is trimmed).
  r = f.run("status", {"--token-file", d.write("crlf", "abc\r\nX-Injected: 1\n")});
  CHECK(r.status == 2);
  CHECK(r.err.find("control character") != std::string::npos);
  CHECK(f.run("status", {"--token-file", d.write("nul", std::string("ab\0cd", 5))}).status == 2);
  CHECK(f.run("status", {"--token-file", d.write("del", "ab\x7f" "cd")}).status == 2);
  CHECK(f.run("status", {"--api", "h:1\r\nX: y"}).status == 2);
  CHECK(f.sent.empty());
  REQUIRE(f.run("status", {"--token-file", d.write("ok", "\n  fine-token\r\n")}).status == 0);
  CHECK(f.target.token == "fine-token");
}

TEST_CASE("cli: https targets: --ca-file and client certificates from flags, the environment or the config") {
  TempDir d;
  const std::string config = d.write("node.toml", "node_id = \"n1\"\ndata_dir = \"data\"\nkey_file = \"k\"\n"
                                                  "gossip_listen = \"127.0.0.1:7111\"\nstream_listen = \"127.0.0.1:7112\"\n"
                                                  "[api]\nlisten = \"127.0.0.1:7113\"\ntls_cert = \"n1.pem\"\n"
                                                  "tls_key = \"n1.key\"\ntls_ca = \"ca.pem\"\ntls_verify_client = true\n");
  FakeApi f;
  REQUIRE(f.run("status", {"--config", config}).status == 0);
  CHECK(f.target.base_url == "https://127.0.0.1:7113");  // the node speaks TLS
  CHECK(f.target.ca_file == (d.path / "ca.pem").string());
  CHECK(f.target.cert_file == (d.path / "n1.pem").string());
  CHECK(f.target.key_file == (d.path / "n1.key").string());
  f.env["CAESIUM_CA_FILE"] = "/env/ca.pem";
  REQUIRE(f.run("status", {"--config", config}).status == 0);
  CHECK(f.target.ca_file == "/env/ca.pem");
  REQUIRE(f.run("status", {"--api", "https://h:1", "--ca-file", "/flag/ca.pem", "--cert-file", "c.pem", "--key-file",
                           "c.key"})
              .status == 0);
  CHECK(f.target.base_url == "https://h:1");
  CHECK(f.target.ca_file == "/flag/ca.pem");
  CHECK(f.target.cert_file == "c.pem");
  auto r = f.run("status", {"--api", "https://h:1", "--cert-file", "c.pem"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--cert-file and --key-file together") != std::string::npos);
}

TEST_CASE("cli: a 403 says the token's scope does not cover the command") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  f.env["CAESIUM_TOKEN"] = "reader-token";
  f.answers = {answer(403, {{"error", "the token 'dash' has the read scope; this needs write"}, {"field", "scope"}})};
  auto r = f.run("rm", {"v", "acme", "report"});
  CHECK(r.status == 1);
  CHECK(r.err.find("forbidden (403)") != std::string::npos);
  CHECK(r.err.find("read scope") != std::string::npos);
}

TEST_CASE("cli: put builds the entry from field options") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  f.answers = {answer(201, kEntry)};
  auto r = f.run("put", {"v", "acme", "report", "--cron", "0 9 * * MON", "--tz", "Europe/London", "--handler", "tick",
                         "--bind", "n1", "--bind=tag:eu", "--prefer-origin", "--semantics", "at_most_once",
                         "--jitter", "30s", "--payload", "hi", "--w", "2"});
  REQUIRE(r.status == 0);
  REQUIRE(f.sent.size() == 1);
  CHECK(f.sent[0].method == "PUT");
  CHECK(f.sent[0].path == "/v1/volumes/v/entities/acme/schedule/report?w=2");
  json b = json::parse(f.sent[0].body);
  const json want = {{"cron", "0 9 * * MON"}, {"tz", "Europe/London"}, {"handler", "tick"}, {"bind", {"n1", "tag:eu"}},
                     {"prefer_origin", true}, {"semantics", "at_most_once"}, {"jitter", "30s"}, {"payload", "hi"}};
  CHECK(b.dump() == want.dump());
  CHECK(r.out.find("timing     every 20s for 2m\n") != std::string::npos);
  f.run("put", {"v", "acme", "t", "--interval", "20s", "--repeat-for", "2m", "--jitter", "1s", "--handler", "h"});
  const json timer = {{"timer", {{"interval", "20s"}, {"repeat_for", "2m"}, {"jitter", "1s"}}}, {"handler", "h"}};
  CHECK(json::parse(f.sent[1].body).dump() == timer.dump());
  TempDir d;
  const std::string doc = d.write("e.json", R"({"cron": "* * * * *", "handler": "h"})");
  REQUIRE(f.run("put", {"v", "acme", "t", "--file", doc}).status == 0);
  CHECK(f.sent[2].body == R"({"cron": "* * * * *", "handler": "h"})");
}

TEST_CASE("cli: pause and resume post to the entry's controls, put sets the controls from options") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  json paused = kEntry;
  paused["paused"] = true;
  paused["timeout"] = "1m";
  f.answers = {answer(200, paused)};
  auto p = f.run("pause", {"v", "acme", "report", "--w=2"});
  REQUIRE(p.status == 0);
  REQUIRE(f.sent.size() == 1);
  CHECK(f.sent[0].method == "POST");
  CHECK(f.sent[0].path == "/v1/volumes/v/entities/acme/schedule/report/pause?w=2");
  CHECK(f.sent[0].body.empty());
  CHECK(p.out.find("paused acme/report in v\n") == 0);
  CHECK(p.out.find("paused     yes") != std::string::npos);
  CHECK(p.out.find("timeout    1m") != std::string::npos);
  f.answers = {answer(200, kEntry)};
  auto r = f.run("resume", {"v", "acme", "report"});
  REQUIRE(r.status == 0);
  CHECK(f.sent[1].path == "/v1/volumes/v/entities/acme/schedule/report/resume");
  CHECK(r.out.find("paused     yes") == std::string::npos);
  CHECK(f.run("pause", {"v", "acme"}).status == 2);  // NAME missing

  f.answers = {answer(201, kEntry)};
  REQUIRE(f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h", "--paused", "--run-timeout", "90s",
                        "--not-before", "2026-05-01T00:00:00Z", "--not-after=2026-06-01T00:00:00Z"})
              .status == 0);
  const json want = {{"cron", "* * * * *"}, {"handler", "h"}, {"timeout", "90s"}, {"not_before", "2026-05-01T00:00:00Z"},
                     {"not_after", "2026-06-01T00:00:00Z"}, {"paused", true}};
  CHECK(json::parse(f.sent.back().body) == want);
}

TEST_CASE("cli: put maps the retry options into the entry's retry object, get shows the policy") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  json retrying = kEntry;
  retrying["retry"] = {{"attempts", 3}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.2}};
  f.answers = {answer(201, retrying)};
  auto r = f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h", "--retry-attempts", "3",
                         "--retry-backoff", "1s", "--retry-max-backoff=1m", "--retry-jitter", "0.2"});
  REQUIRE(r.status == 0);
  const json want = {{"cron", "* * * * *"},
                     {"handler", "h"},
                     {"retry", {{"attempts", 3}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.2}}}};
  CHECK(json::parse(f.sent.back().body) == want);
  CHECK(r.out.find("retry      3 attempts, backoff 1s doubling to 1m, jitter 0.2\n") != std::string::npos);

  // One option alone sends only its own field; none sends no retry object.
  REQUIRE(f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h", "--retry-attempts", "5"}).status == 0);
  CHECK(json::parse(f.sent.back().body)["retry"] == json{{"attempts", 5}});
  REQUIRE(f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h"}).status == 0);
  CHECK_FALSE(json::parse(f.sent.back().body).contains("retry"));

  // What is not a number is a usage error, and nothing is sent; ranges are the API's.
  const size_t sent = f.sent.size();
  CHECK(f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h", "--retry-attempts", "three"}).status == 2);
  CHECK(f.run("put", {"v", "acme", "t", "--cron", "* * * * *", "--handler", "h", "--retry-jitter", "20%"}).status == 2);
  CHECK(f.run("put", {"v", "acme", "t", "--data", "{}", "--retry-attempts", "3"}).status == 2);  // doc and options
  CHECK(f.sent.size() == sent);

  // The policy is shown only when the entry retries; jitter 0 and an equal cap are left out.
  CHECK(describe_retry(kEntry).empty());
  json once = kEntry;
  once["retry"] = {{"attempts", 1}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.0}};
  CHECK(describe_retry(once).empty());
  CHECK(render_entry(once).find("retry") == std::string::npos);
  json flat = kEntry;
  flat["retry"] = {{"attempts", 4}, {"backoff", "30s"}, {"max_backoff", "30s"}, {"jitter", 0.0}};
  CHECK(describe_retry(flat) == "4 attempts, backoff 30s");
  CHECK(describe_retry(json{{"retry", "odd"}}).empty());  // never throws on odd shapes
  CHECK(describe_retry(json{{"retry", {{"attempts", "3"}}}}).empty());
}

TEST_CASE("cli: pause and resume by prefix follow the bulk route's pages") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  f.answers = {answer(200, {{"volume", "v"}, {"paused", true}, {"changed", {"acme/caesium/schedule/a"}},
                            {"unchanged", 1}, {"next", "acme/caesium/schedule/b"}}),
               answer(200, {{"volume", "v"}, {"paused", true}, {"changed", {"acme2/caesium/schedule/c"}},
                            {"unchanged", 0}, {"next", nullptr}})};
  auto p = f.run("pause", {"v", "--prefix", "acme", "--w=2"});
  REQUIRE(p.status == 0);
  REQUIRE(f.sent.size() == 2);
  CHECK(f.sent[0].method == "POST");
  CHECK(f.sent[0].path == "/v1/volumes/v/pause?prefix=acme&w=2&after=");
  CHECK(f.sent[1].path == "/v1/volumes/v/pause?prefix=acme&w=2&after=acme%2Fcaesium%2Fschedule%2Fb");
  CHECK(p.out == "paused 2 entries in v (1 already paused)\n  acme/caesium/schedule/a\n  acme2/caesium/schedule/c\n");

  f.answers = {answer(200, {{"volume", "v"}, {"paused", false}, {"changed", json::array()}, {"unchanged", 0},
                            {"next", nullptr}})};
  auto r = f.run("resume", {"v", "acme", "--name-prefix", "daily "});
  REQUIRE(r.status == 0);
  CHECK(f.sent[2].path == "/v1/volumes/v/resume?entity=acme&name_prefix=daily%20&after=");
  CHECK(r.out == "resumed 0 entries in v (0 already running)\n");

  // The forms that name neither one entry nor a prefix are usage errors; nothing is sent.
  CHECK(f.run("pause", {"v", "--prefix", "a", "--name-prefix", "b"}).status == 2);
  CHECK(f.run("pause", {"v", "acme", "--prefix", "a"}).status == 2);
  CHECK(f.run("pause", {"v", "--name-prefix", "b"}).status == 2);
  CHECK(f.run("resume", {"v", "acme", "x", "--name-prefix", "b"}).status == 2);
  CHECK(f.sent.size() == 3);
}

TEST_CASE("cli: remote errors exit 1 and say what to do") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  f.answers = {answer(401, {{"error", "the bearer token is not valid"}})};
  auto u = f.run("get", {"v", "acme", "x"});
  CHECK(u.status == 1);
  CHECK(u.err.find("unauthorized (401): the bearer token is not valid") != std::string::npos);
  CHECK(u.err.find("--token-file") != std::string::npos);
  f.answers = {answer(404, {{"error", "no entry 'x'"}, {"field", "name"}})};
  auto n = f.run("rm", {"v", "acme", "x"});
  CHECK(n.status == 1);
  CHECK(n.err.find("not found (404): no entry 'x'") != std::string::npos);
  f.answers = {answer(400, {{"error", "bad cron"}, {"field", "cron"}})};
  auto b = f.run("put", {"v", "acme", "x", "--cron", "x", "--handler", "h"});
  CHECK(b.status == 1);
  CHECK(b.err.find("HTTP 400: bad cron [field: cron]") != std::string::npos);
  f.answers = {ClientResponse{false, 0, "", "Connection refused"}};
  auto c = f.run("status", {});
  CHECK(c.status == 1);
  CHECK(c.err.find("cannot reach the API at http://h:1: Connection refused") != std::string::npos);
  f.answers = {ClientResponse{true, 502, "<html>", ""}};
  CHECK(f.run("status", {}).err.find("HTTP 502: the API answered HTTP 502") != std::string::npos);
}

TEST_CASE("cli: ls pages with --all and prints a table, --json prints the JSON") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  json e2 = kEntry;
  e2["name"] = "second";
  e2.erase("timer");
  e2["cron"] = "0 9 * * *";
  e2["tz"] = "UTC";
  f.answers = {answer(200, {{"entries", {kEntry}}, {"next", "acme/caesium/schedule/report"}}),
               answer(200, {{"entries", {e2}}, {"next", nullptr}})};
  auto r = f.run("ls", {"v", "--prefix", "ac me", "--all", "--limit", "1"});
  REQUIRE(r.status == 0);
  REQUIRE(f.sent.size() == 2);
  CHECK(f.sent[0].path == "/v1/volumes/v/entries?after=&prefix=ac%20me&limit=1");
  CHECK(f.sent[1].path == "/v1/volumes/v/entries?after=acme%2Fcaesium%2Fschedule%2Freport&prefix=ac%20me&limit=1");
  CHECK(r.out ==
        "ENTITY  NAME    TIMING                HANDLER  SEMANTICS      NEXT\n"
        "acme    report  every 20s for 2m      tick     at_least_once  2026-03-20T09:47:00Z\n"
        "acme    second  cron 0 9 * * * (UTC)  tick     at_least_once  2026-03-20T09:47:00Z\n");
  f.answers = {answer(200, {{"entries", {kEntry}}, {"next", "k"}})};
  auto one = f.run("ls", {"v"});
  CHECK(one.out.find("(more: --after k, or --all)") != std::string::npos);
  auto j = f.run("ls", {"v", "--json"});
  CHECK(json::parse(j.out)["entries"][0]["name"] == "report");
}

TEST_CASE("cli: config apply sends the file, history and status render") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  TempDir d;
  const std::string file = d.write("c.json", R"({"epoch": 2, "nodes": [], "volumes": []})");
  f.answers = {answer(200, {{"epoch", 2}, {"nodes", {{{"id", "n1"}}}}, {"volumes", {{{"name", "v"}, {"replicas", {"n1", "n2"}}}}}})};
  auto r = f.run("config", {"apply", file});
  REQUIRE(r.status == 0);
  CHECK(f.sent[0].method == "PUT");
  CHECK(f.sent[0].path == "/v1/config");
  CHECK(f.sent[0].body == R"({"epoch": 2, "nodes": [], "volumes": []})");
  CHECK(r.out.find("applied cluster config epoch 2") == 0);
  CHECK(r.out.find("v       n1,n2     -") != std::string::npos);
  f.answers = {answer(200, {{"epoch", 3}, {"nodes", json::array()}, {"volumes", json::array()}})};
  REQUIRE(f.run("config", {"apply", file, "--force"}).status == 0);
  CHECK(f.sent.back().path == "/v1/config?force=true");
  f.answers = {answer(200, {{"occurrences",
                             {{{"scheduled", "2026-03-20T10:00:00Z"}, {"outcome", "completed"}, {"runs", 2}, {"retries", 1}, {"duplicates", 0},
                               {"owners", {{{"node", "n1"}, {"path", "takeover"}}}},
                               {"attempts", {{{"worker", "n2"}, {"attempt", 1}, {"state", "failed"}},
                                             {{"worker", "n3"}, {"attempt", 2}, {"state", "completed"}}}}}}}})};
  auto h = f.run("history", {"v", "acme", "x", "--limit", "5"});
  CHECK(f.sent.back().path == "/v1/volumes/v/entities/acme/schedule/x/history?limit=5");
  CHECK(h.out ==
        "SCHEDULED             OUTCOME    OWNER(PATH)   ATTEMPTS                     RUNS  RETRIES  DUPLICATES\n"
        "2026-03-20T10:00:00Z  completed  n1(takeover)  n2#1:failed, n3#2:completed  2     1        0\n");
  f.answers = {answer(200, {{"occurrences", json::array()}})};
  CHECK(f.run("history", {"v", "acme", "x"}).out == "no occurrences recorded yet\n");
  f.answers = {answer(200, {{"node", "n1"}, {"config_epoch", 3}, {"active", true}, {"pending", {{"running_invocations", 0}}},
                            {"scheduler", {{"missed", 1}, {"lost", 0}, {"skipped", 2}, {"skipped_overlap", 3}, {"failed", 4},
                                           {"timed_out", 1}, {"replaced", 2}, {"retried", 5}}},
                            {"members", {{{"id", "n1"}, {"state", "alive"}, {"incarnation", 4},
                                          {"load", {{"running", 1}}}, {"capacity", {{"cores", 8}, {"memory_mb", 4096}, {"max_running", 16}}},
                                          {"priority", 30}, {"tags", {"eu"}}, {"api_addr", "127.0.0.1:7113"},
                                          {"clock_ahead_ms", nullptr}},
                                         {{"id", "n2"}, {"state", "alive"}, {"incarnation", 2},
                                          {"load", {{"running", 0}}}, {"capacity", {{"cores", 8}, {"memory_mb", 4096}, {"max_running", 16}}},
                                          {"priority", 20}, {"tags", json::array()}, {"api_addr", "127.0.0.1:7123"},
                                          {"clock_ahead_ms", 2500}}}},
                            {"volumes", {{{"name", "v"}, {"replicas", {"n1"}}, {"master", "n1"}, {"replica", true}, {"records", 12}, {"filled", false}}}}})};
  auto s = f.run("status", {});
  CHECK(s.out.find("node n1  config epoch 3  active yes  running invocations 0\n") == 0);
  CHECK(s.out.find("occurrences decided here: missed 1  lost 0  skipped 2  skipped_overlap 3\n"
                   "runs here: failed 4  timed_out 1  replaced 2  retries decided 5\n") != std::string::npos);
  CHECK(s.out.find("n1      alive  4            1/16  8c 4096MB  30        eu    127.0.0.1:7113  -\n") != std::string::npos);
  // A peer whose clock is known to be ahead shows by how much, at least.
  CHECK(s.out.find("n2      alive  2            0/16  8c 4096MB  20        -     127.0.0.1:7123  +2500ms\n") !=
        std::string::npos);
  CHECK(s.out.find("v       n1        n1      yes    12       no") != std::string::npos);
}

TEST_CASE("cli rendering: tables, timings and odd input") {
  CHECK(render_table({"A", "LONGER"}, {{"xyz", "1"}, {"b"}}) == "A    LONGER\nxyz  1\nb\n");
  CHECK(render_table({"A"}, {{"line\nbreak"}}) == "A\nline break\n");
  CHECK(describe_timing(json{{"timer", {{"at", "2026-01-01T00:00:00Z"}}}}) == "at 2026-01-01T00:00:00Z");
  CHECK(describe_timing(json{{"timer", {{"after", "1h"}}}}) == "after 1h");
  CHECK(describe_timing(json{{"timer", {{"interval", "5s"}, {"count", 3}}}}) == "every 5s x3");
  CHECK(describe_timing(json{{"cron", "* * * * *"}, {"tz", "UTC"}}) == "cron * * * * * (UTC)");
  CHECK(describe_timing(json("nonsense")) == "-");
  CHECK(render_status(json::array()).find("MEMBER") != std::string::npos);  // never throws on odd shapes
  CHECK(render_entry(json{{"payload_base64", "AAE="}}).find("(binary, base64) AAE=") != std::string::npos);
}

TEST_CASE("cli: trigger posts to the entry's trigger route with the idempotency key") {
  FakeApi f;
  f.env["CAESIUM_API"] = "h:1";
  const json answer_body = {{"id", "k0123456789abcdef"},
                            {"scheduled", "2026-03-20T10:04:31.207Z"},
                            {"scheduled_ms", 1774001071207},
                            {"repeat", false},
                            {"entry", kEntry}};
  f.answers = {answer(200, answer_body)};
  auto t = f.run("trigger", {"v", "acme", "report", "--w=2", "--idempotency-key", "deploy-4711"});
  REQUIRE(t.status == 0);
  REQUIRE(f.sent.size() == 1);
  CHECK(f.sent[0].method == "POST");
  CHECK(f.sent[0].path == "/v1/volumes/v/entities/acme/schedule/report/trigger?w=2");
  CHECK(f.sent[0].body.empty());
  CHECK(f.target.idempotency_key == "deploy-4711");
  CHECK(t.out == "triggered acme/report in v: occurrence 2026-03-20T10:04:31.207Z (trigger k0123456789abcdef)\n");

  json repeat = answer_body;
  repeat["repeat"] = true;
  f.answers = {answer(200, repeat)};
  auto r = f.run("trigger", {"v", "acme", "report"});
  REQUIRE(r.status == 0);
  CHECK(f.target.idempotency_key.empty());
  CHECK(r.out.find("already triggered acme/report") == 0);

  // A key the API would refuse is refused before anything is sent.
  const size_t sent = f.sent.size();
  auto bad = f.run("trigger", {"v", "acme", "report", "--idempotency-key", std::string(201, 'k')});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--idempotency-key") != std::string::npos);
  CHECK(f.sent.size() == sent);
  f.answers = {answer(409, {{"error", "entry 'report' of entity 'acme' is paused; resume it first"}, {"field", "paused"}})};
  auto paused = f.run("trigger", {"v", "acme", "report"});
  CHECK(paused.status == 1);
  CHECK(paused.err.find("is paused") != std::string::npos);
}
