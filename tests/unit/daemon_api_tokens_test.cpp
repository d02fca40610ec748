// Scoped API tokens (node/daemon/api/api_tokens.h): the tokens file and its errors, and
// what ApiHandler answers each scope — 401 without a known token, 403 out of scope or
// out of its volumes, /v1/whoami, /timers open or closed, tokens replaced as SIGHUP does.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>

#include "node/daemon/api/api.h"
#include "tests/unit/daemon_api_fixture.h"
#include "tests/unit/daemon_test_support.h"

using namespace caesium;
using namespace caesium::daemon;
using nlohmann::json;

namespace {

constexpr const char* kReader = "reader-secret-0123456789";
constexpr const char* kWriter = "writer-secret-0123456789";
constexpr const char* kAdmin = "admin-secret-0123456789";
constexpr const char* kPairWriter = "pair-writer-secret-0123";

const char* kEntry = R"({"timer": {"interval": "20s", "repeat_for": "2m"}, "handler": "tick"})";

TokenSet scoped_tokens() {
  TokenSet t;
  t.add("dash", kReader, Scope::kRead);
  t.add("ci", kWriter, Scope::kWrite);
  t.add("ops", kAdmin, Scope::kAdmin);
  t.add("pair-only", kPairWriter, Scope::kWrite, {"pair"});
  return t;
}

ServerRequest as(const std::string& secret, const std::string& method, const std::string& target,
                 const std::string& body = {}) {
  ServerRequest r = test::api_request(method, target, body, false);
  if (!secret.empty()) r.headers.emplace_back("authorization", "Bearer " + secret);
  return r;
}

struct Fixture {
  test::ApiTestNode n;
  ApiHandler h;
  explicit Fixture(ApiOptions o = options()) : h(std::move(o), n.backend()) {}
  static ApiOptions options() {
    ApiOptions o = test::api_test_options();
    o.token.clear();
    o.tokens = scoped_tokens();
    return o;
  }
  ApiAction run(const std::string& secret, const std::string& method, const std::string& target,
                const std::string& body = {}) {
    return h.handle(as(secret, method, target, body));
  }
  int status(const std::string& secret, const std::string& method, const std::string& target,
             const std::string& body = {}) {
    return run(secret, method, target, body).response.status;
  }
};

std::string write_file(const test::TempDir& d, const std::string& name, const std::string& text) {
  std::ofstream(d.sub(name)) << text;
  return d.sub(name);
}

std::string load_error(const std::string& text) {
  test::TempDir d;
  TokenSet set;
  Status s = read_tokens_file(write_file(d, "tokens.toml", text), set);
  REQUIRE_FALSE(s.ok());
  CHECK(set.empty());
  return s.error().message;
}

}  // namespace

TEST_CASE("api tokens: a tokens file gives named tokens with scopes and volume limits") {
  test::TempDir d;
  const std::string path = write_file(d, "tokens.toml",
                                      "[[token]]\nname = \"dash\"\ntoken = \"reader-secret-0123456789\"\n"
                                      "scope = \"read\"\n\n"
                                      "[[token]]\nname = \"ci\"\ntoken = \"writer-secret-0123456789\"\n"
                                      "scope = \"write\"\nvolumes = [\"pair\", \"v\"]\n");
  TokenSet set;
  REQUIRE(read_tokens_file(path, set).ok());
  REQUIRE(set.size() == 2);
  const ApiToken* dash = set.find(kReader);
  REQUIRE(dash != nullptr);
  CHECK(dash->name == "dash");
  CHECK(dash->scope == Scope::kRead);
  CHECK(dash->allows_volume("anything"));
  const ApiToken* ci = set.find(kWriter);
  REQUIRE(ci != nullptr);
  CHECK(ci->scope == Scope::kWrite);
  CHECK(ci->allows_volume("v"));
  CHECK_FALSE(ci->allows_volume("far"));
  CHECK(set.find("reader-secret-012345678") == nullptr);  // one character short
  CHECK(set.find("") == nullptr);
  // api.token_file's token joins as an unlimited admin named "token_file".
  const std::string single = write_file(d, "token", "  the-old-single-token\n");
  auto both = load_api_tokens(single, path);
  REQUIRE(both.ok());
  CHECK(both->size() == 3);
  REQUIRE(both->find("the-old-single-token") != nullptr);
  CHECK(both->find("the-old-single-token")->scope == Scope::kAdmin);
  CHECK(both->find("the-old-single-token")->name == "token_file");
}

TEST_CASE("api tokens: every mistake in a tokens file is reported with its place, never the secret") {
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"short\"\nscope = \"read\"\n").find("token[1].token") !=
        std::string::npos);
  const std::string scope = load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"root\"\n");
  CHECK(scope.find("\"root\" is not a scope") != std::string::npos);
  CHECK(scope.find("long-enough-secret-1") == std::string::npos);
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\n").find("scope") != std::string::npos);
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"read\"\nvolumes = []\n")
            .find("allows no volume") != std::string::npos);
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"read\"\nvolumes = [\"a/b\"]\n")
            .find("not a volume name") != std::string::npos);
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"read\"\ncolour = 1\n")
            .find("colour") != std::string::npos);
  const std::string twice = load_error(
      "[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"read\"\n"
      "[[token]]\nname = \"b\"\ntoken = \"long-enough-secret-1\"\nscope = \"admin\"\n");
  CHECK(twice.find("the same secret as token \"a\"") != std::string::npos);
  CHECK(twice.find("long-enough-secret-1") == std::string::npos);
  CHECK(load_error("[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-1\"\nscope = \"read\"\n"
                   "[[token]]\nname = \"a\"\ntoken = \"long-enough-secret-2\"\nscope = \"read\"\n")
            .find("names another token") != std::string::npos);
  CHECK(load_error("# nothing\n").find("no [[token]]") != std::string::npos);
  CHECK(load_error("[[token]\n").size() > 0);  // not TOML
  test::TempDir d;
  auto missing = load_api_tokens("", d.sub("absent.toml"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot read") != std::string::npos);
  auto crlf = load_api_tokens(write_file(d, "t", "abc\r\ndef\n"), "");
  REQUIRE_FALSE(crlf.ok());
  CHECK(crlf.error().message.find("control character") != std::string::npos);
}

TEST_CASE("api tokens: read sees, write writes entries, admin changes the config, otherwise 403") {
  Fixture f;
  const std::string entry = "/v1/volumes/v/entities/acme/schedule/report";
  CHECK(f.status("", "GET", "/v1/status") == 401);
  CHECK(f.status("not-a-configured-token", "GET", "/v1/status") == 401);
  CHECK(f.h.counters().auth_failures == 2);

  CHECK(f.status(kReader, "GET", "/v1/status") == 200);
  CHECK(f.status(kReader, "GET", "/v1/config") == 200);
  CHECK(f.status(kReader, "GET", "/v1/volumes/v/entries") == 200);
  ApiAction refused = f.run(kReader, "PUT", entry, kEntry);
  CHECK(refused.response.status == 403);
  const json why = json::parse(refused.response.body);
  CHECK(why["field"] == "scope");
  CHECK(why["error"].get<std::string>().find("'dash' has the read scope; this needs write") != std::string::npos);
  CHECK(f.status(kReader, "DELETE", entry) == 403);
  CHECK(f.h.counters().scope_refusals == 2);

  CHECK(f.run(kWriter, "PUT", entry, kEntry).kind == ApiAction::Kind::kAwaitWrite);  // accepted, waits for the disk
  f.n.settle();
  CHECK(f.status(kReader, "GET", entry) == 200);
  const std::string config = f.run(kReader, "GET", "/v1/config").response.body;
  json next = json::parse(config);
  next["epoch"] = next["epoch"].get<uint64_t>() + 1;
  CHECK(f.status(kWriter, "PUT", "/v1/config?force=true", next.dump()) == 403);
  CHECK(f.status(kAdmin, "PUT", "/v1/config?force=true", next.dump()) == 200);
  // A 403 happens before the body is looked at: garbage from a reader is still 403.
  CHECK(f.status(kReader, "PUT", entry, "{not json") == 403);
}

TEST_CASE("api tokens: a token limited to volumes reaches only those, and never the whole-cluster config") {
  Fixture f;
  CHECK(f.status(kPairWriter, "GET", "/v1/volumes/pair/entries") == 200);
  ApiAction other = f.run(kPairWriter, "GET", "/v1/volumes/v/entries");
  CHECK(other.response.status == 403);
  const json why = json::parse(other.response.body);
  CHECK(why["field"] == "volume");
  CHECK(why["error"].get<std::string>().find("limited to volumes [pair]") != std::string::npos);
  CHECK(f.status(kPairWriter, "PUT", "/v1/volumes/v/entities/a/schedule/b", kEntry) == 403);
  CHECK(f.status(kPairWriter, "GET", "/v1/status") == 200);  // not about a volume
  // Even an admin limited to volumes may not change every volume's config.
  ApiOptions o = Fixture::options();
  o.tokens.add("pair-admin", "pair-admin-secret-01234", Scope::kAdmin, {"pair"});
  Fixture g(std::move(o));
  ApiAction config = g.run("pair-admin-secret-01234", "PUT", "/v1/config", "{}");
  CHECK(config.response.status == 403);
  CHECK(json::parse(config.response.body)["error"].get<std::string>().find("changes every volume") !=
        std::string::npos);
}

TEST_CASE("api tokens: /v1/whoami names the token, its scope, volumes and the node's features") {
  Fixture f;
  ApiAction a = f.run(kPairWriter, "GET", "/v1/whoami");
  REQUIRE(a.response.status == 200);
  const json who = json::parse(a.response.body);
  CHECK(who["token"] == "pair-only");
  CHECK(who["scope"] == "write");
  CHECK(who["volumes"] == json::array({"pair"}));
  CHECK(who["node"] == "n1");
  CHECK(who["features"] == json(api_features()));
  CHECK(a.response.body.find(kPairWriter) == std::string::npos);  // never the secret
  CHECK(json::parse(f.run(kReader, "GET", "/v1/whoami").response.body)["volumes"].is_null());
  CHECK(json::parse(f.run(kReader, "GET", "/v1/status").response.body)["features"] == json(api_features()));
  CHECK(f.status("", "GET", "/v1/whoami") == 401);
}

TEST_CASE("api tokens: /timers is open unless chronos_requires_token, then it takes a write token") {
  const std::string timer =
      R"({"timing": {"interval": 10, "repeat-for": 30}, "callback": {"http": {"uri": "http://localhost:1234/cb"}}})";
  {
    Fixture open;
    ApiAction a = open.run("", "POST", "/timers", timer);
    CHECK(a.response.status == 200);
    CHECK(a.kind == ApiAction::Kind::kAwaitWrite);
  }
  ApiOptions o = Fixture::options();
  o.chronos_requires_token = true;
  Fixture closed(std::move(o));
  CHECK(closed.status("", "POST", "/timers", timer) == 401);
  CHECK(closed.status(kReader, "POST", "/timers", timer) == 403);
  CHECK(closed.status(kPairWriter, "POST", "/timers", timer) == 403);  // the Chronos volume is "v"
  CHECK(closed.status(kWriter, "POST", "/timers", timer) == 200);
}

TEST_CASE("api tokens: replaced tokens (SIGHUP) take effect for the next request") {
  Fixture f;
  CHECK(f.status(kReader, "GET", "/v1/status") == 200);
  TokenSet fresh;
  fresh.add("new-dash", "a-brand-new-secret-0001", Scope::kRead);
  f.h.set_tokens("", std::move(fresh));
  CHECK(f.status(kReader, "GET", "/v1/status") == 401);
  CHECK(f.status("a-brand-new-secret-0001", "GET", "/v1/status") == 200);
  f.h.set_tokens("a-single-admin-token-01", TokenSet{});
  CHECK(f.status("a-brand-new-secret-0001", "GET", "/v1/status") == 401);
  CHECK(f.status("a-single-admin-token-01", "PUT", "/v1/config", "{}") == 400);  // past auth, to the body
}
