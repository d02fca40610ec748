// The dashboard's files at /ui (node/daemon/api/api_ui.cpp): served from the binary
// without a token, with types and headers that keep the page to this node's origin.
#include <catch2/catch.hpp>

#include "node/daemon/api/api.h"
#include "node/daemon/ui/ui_assets.h"
#include "tests/unit/daemon_api_fixture.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::api_request;

TEST_CASE("ui: the dashboard's files are served without a token, the page under /ui/") {
  test::ApiTestNode n;
  ApiHandler h(test::api_test_options(), n.backend());
  for (const char* root : {"/", "/ui"}) {
    ApiAction a = h.handle(api_request("GET", root, {}, false));
    CHECK(a.response.status == 302);
    REQUIRE(a.response.header("Location") != nullptr);
    CHECK(*a.response.header("Location") == "/ui/");
  }
  ApiAction page = h.handle(api_request("GET", "/ui/", {}, false));
  REQUIRE(page.response.status == 200);
  CHECK(page.response.content_type == "text/html; charset=utf-8");
  CHECK(page.response.body == std::string(find_ui_asset("index.html")->body));
  CHECK(page.response.body.find("<script src=\"app.js\"") != std::string::npos);
  REQUIRE(page.response.header("Content-Security-Policy") != nullptr);
  CHECK(page.response.header("Content-Security-Policy")->find("script-src 'self'") != std::string::npos);
  CHECK(*page.response.header("X-Frame-Options") == "DENY");

  ApiAction js = h.handle(api_request("GET", "/ui/app.js", {}, false));
  REQUIRE(js.response.status == 200);
  CHECK(js.response.content_type == "text/javascript; charset=utf-8");
  CHECK(js.response.body.find("sessionStorage") != std::string::npos);
  CHECK(h.handle(api_request("GET", "/ui/app.css", {}, false)).response.content_type == "text/css; charset=utf-8");

  CHECK(h.handle(api_request("GET", "/ui/missing.js", {}, false)).response.status == 404);
  CHECK(h.handle(api_request("GET", "/ui/a/app.js", {}, false)).response.status == 404);
  CHECK(h.handle(api_request("GET", "/ui/..%2fapp.js", {}, false)).response.status == 404);
  CHECK(h.handle(api_request("POST", "/ui/app.js", "x", false)).response.status == 405);
  CHECK(h.counters().auth_failures == 0);
}

TEST_CASE("ui: the built-in files hold no reference to anything outside this node") {
  REQUIRE(ui_assets().size() >= 3);
  for (const auto& a : ui_assets()) {
    INFO(a.name);
    CHECK(a.body.find("http://") == std::string_view::npos);
    CHECK(a.body.find("https://") == std::string_view::npos);
    CHECK(a.body.find("//cdn") == std::string_view::npos);
  }
}
