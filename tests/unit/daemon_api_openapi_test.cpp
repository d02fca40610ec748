// docs/openapi.yaml against the router's table (node/daemon/api/api_routes.cpp): every
// route is documented with its method and scope, every documented operation is served,
// and the router answers a documented path with the documented route.
//
// The YAML is read by its layout, not by a YAML library (the file's header asks for it):
// under "paths:", a path is a key at two spaces, a method a key at four, and
// "x-caesium-scope:" a key at six.  A path or method written any other way is not seen,
// and then the comparison with the table fails, so the layout cannot drift silently.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "node/daemon/api/api_routes.h"
#include "node/daemon/http/http_request.h"

using namespace caesium::daemon;

namespace {

struct DocOperation {
  std::string scope;  // "" when the operation names none
  int line = 0;
};

// "GET /v1/status" -> its operation.
using DocOperations = std::map<std::string, DocOperation>;

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

DocOperations read_openapi_paths(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  static const std::regex path_key(R"(^  (/[^:\s]*):\s*$)");
  static const std::regex method_key(R"(^    (get|put|post|delete|patch|head|options):\s*$)");
  static const std::regex scope_key(R"(^      x-caesium-scope:\s*(\S+)\s*$)");
  DocOperations ops;
  bool in_paths = false;
  std::string current_path, current_op;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') {
      in_paths = line == "paths:";
      current_path.clear();
      current_op.clear();
      continue;
    }
    if (!in_paths) continue;
    std::smatch m;
    if (std::regex_match(line, m, path_key)) {
      current_path = m[1];
      current_op.clear();
    } else if (std::regex_match(line, m, method_key)) {
      REQUIRE_FALSE(current_path.empty());
      current_op = upper(m[1]) + " " + current_path;
      INFO(path << ":" << n << ": " << current_op);
      CHECK(ops.count(current_op) == 0);
      ops[current_op] = DocOperation{"", n};
    } else if (std::regex_match(line, m, scope_key)) {
      REQUIRE_FALSE(current_op.empty());
      ops[current_op].scope = m[1];
    } else if (line.rfind("    ", 0) != 0 && line.find_first_not_of(' ') != std::string::npos &&
               line.find_first_not_of(' ') < 4) {
      // Any other key at two spaces under paths: is a path the pattern did not take.
      FAIL_CHECK(path << ":" << n << ": not read as a path: " << line);
    }
  }
  return ops;
}

// "/v1/volumes/{volume}/entries" -> {"v1", "volumes", "x", "entries"}: a concrete path
// the template matches.
std::vector<std::string> concrete_segments(const std::string& templ) {
  std::vector<std::string> segments;
  REQUIRE(split_path(templ, segments));
  for (auto& s : segments) {
    if (!s.empty() && s.front() == '{') s = "x";
  }
  return segments;
}

}  // namespace

TEST_CASE("openapi: docs/openapi.yaml documents exactly the /v1 routes the router serves, with their scopes") {
  const char* root = std::getenv("CAESIUM_SOURCE_DIR");
  REQUIRE(root != nullptr);
  const DocOperations doc = read_openapi_paths(std::string(root) + "/docs/openapi.yaml");
  REQUIRE_FALSE(doc.empty());

  std::set<std::string> served;
  for (const auto& r : v1_routes()) {
    const std::string op = std::string(r.method) + " " + r.path;
    served.insert(op);
    INFO("route " << op << " (node/daemon/api/api_routes.cpp)");
    auto it = doc.find(op);
    CHECK(it != doc.end());  // every route documented
    if (it != doc.end()) CHECK(it->second.scope == scope_name(r.scope));
  }
  for (const auto& [op, d] : doc) {
    INFO("docs/openapi.yaml:" << d.line << ": " << op);
    CHECK(served.count(op) == 1);  // every documented operation served
    const size_t space = op.find(' ');
    const RouteMatch m = match_v1_route(op.substr(0, space), concrete_segments(op.substr(space + 1)));
    REQUIRE(m.route != nullptr);  // the router takes the documented path to a route...
    CHECK(std::string(m.route->path) == op.substr(space + 1));  // ...this one
    CHECK(std::string(m.route->method) == op.substr(0, space));
  }
  CHECK(doc.size() == v1_routes().size());
}

TEST_CASE("openapi: the layout reader sees a path, its methods and scopes, and flags a path it cannot read") {
  const std::string dir = std::filesystem::temp_directory_path() / "caesium-openapi-test.yaml";
  std::ofstream(dir) << "openapi: 3.0.3\npaths:\n  /v1/a:\n    get:\n      x-caesium-scope: read\n"
                        "    put:\n      x-caesium-scope: admin\n  /v1/b/{x}:\n    delete:\n      summary: s\n"
                        "components:\n  /v1/not-a-path:\n    get:\n";
  const DocOperations ops = read_openapi_paths(dir);
  std::filesystem::remove(dir);
  REQUIRE(ops.size() == 3);
  CHECK(ops.at("GET /v1/a").scope == "read");
  CHECK(ops.at("PUT /v1/a").scope == "admin");
  CHECK(ops.at("DELETE /v1/b/{x}").scope.empty());
}
