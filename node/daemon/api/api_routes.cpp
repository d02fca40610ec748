// The /v1 route table (api_routes.h).
#include "node/daemon/api/api_routes.h"

namespace caesium::daemon {

namespace {

constexpr const char* kEntry = "/v1/volumes/{volume}/entities/{entity}/schedule/{name}";

// Template segments; "{x}" matches any one segment.
std::vector<std::string> split_template(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 1;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

bool matches(const std::string& path, const std::vector<std::string>& segments) {
  const auto t = split_template(path);
  if (t.size() != segments.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].empty() && t[i].front() == '{') continue;
    if (t[i] != segments[i]) return false;
  }
  return true;
}

}  // namespace

const std::vector<RouteSpec>& v1_routes() {
  static const std::vector<RouteSpec> routes = {
      {RouteId::kStatus, "GET", "/v1/status", Scope::kRead},
      {RouteId::kWhoami, "GET", "/v1/whoami", Scope::kRead},
      {RouteId::kConfigGet, "GET", "/v1/config", Scope::kRead},
      {RouteId::kConfigPut, "PUT", "/v1/config", Scope::kAdmin, true},
      {RouteId::kEntryList, "GET", "/v1/volumes/{volume}/entries", Scope::kRead},
      {RouteId::kEntryGet, "GET", kEntry, Scope::kRead},
      {RouteId::kEntryPut, "PUT", kEntry, Scope::kWrite},
      {RouteId::kEntryDelete, "DELETE", kEntry, Scope::kWrite},
      {RouteId::kEntryHistory, "GET", "/v1/volumes/{volume}/entities/{entity}/schedule/{name}/history", Scope::kRead},
      {RouteId::kEntryPause, "POST", "/v1/volumes/{volume}/entities/{entity}/schedule/{name}/pause", Scope::kWrite},
      {RouteId::kEntryResume, "POST", "/v1/volumes/{volume}/entities/{entity}/schedule/{name}/resume", Scope::kWrite},
      {RouteId::kBulkPause, "POST", "/v1/volumes/{volume}/pause", Scope::kWrite},
      {RouteId::kBulkResume, "POST", "/v1/volumes/{volume}/resume", Scope::kWrite},
      {RouteId::kEntryTrigger, "POST", "/v1/volumes/{volume}/entities/{entity}/schedule/{name}/trigger", Scope::kWrite},
  };
  return routes;
}

const std::vector<std::string>& api_features() {
  // "ui": the dashboard at /ui; "whoami": GET /v1/whoami; "scoped_tokens": 403s by
  // scope; "upcoming": GET of an entry takes ?upcoming=N; "pause": POST .../pause and
  // .../resume of an entry; "bulk_pause": POST /v1/volumes/{volume}/pause and /resume of
  // every entry under a prefix; "trigger": POST .../trigger (run now).
  static const std::vector<std::string> features = {"bulk_pause", "pause", "scoped_tokens", "trigger",
                                                    "ui",         "upcoming", "whoami"};
  return features;
}

RouteMatch match_v1_route(const std::string& method, const std::vector<std::string>& segments) {
  RouteMatch m;
  for (const auto& r : v1_routes()) {
    if (!matches(r.path, segments)) continue;
    m.path_known = true;
    if (m.allow.find(r.method) == std::string::npos) m.allow += (m.allow.empty() ? "" : ", ") + std::string(r.method);
    if (method == r.method) m.route = &r;
  }
  return m;
}

}  // namespace caesium::daemon
