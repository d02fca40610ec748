// The routes of /v1 as one table: the router finds a request's route here (404 when no
// path template matches, 405 with Allow when only other methods do), and the table says
// which scope each needs.  docs/openapi.yaml documents the same set, and
// tests/unit/daemon_api_openapi_test.cpp checks that the two agree.
//
// `features` is what /v1/status reports in "features", so that a client (the dashboard)
// can tell what this node serves without probing: a feature is listed only once its
// routes are in the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/daemon/api/api_tokens.h"

namespace caesium::daemon {

enum class RouteId : uint8_t {
  kStatus,
  kWhoami,
  kConfigGet,
  kConfigPut,
  kEntryList,
  kEntryGet,
  kEntryPut,
  kEntryDelete,
  kEntryHistory,
  kEntryPause,
  kEntryResume,
  kBulkPause,
  kBulkResume,
  kEntryTrigger,
};

struct RouteSpec {
  RouteId id;
  const char* method;
  const char* path;  // OpenAPI style: "/v1/volumes/{volume}/entries"
  Scope scope;
  // The route changes what every volume holds (the cluster config): a token limited to
  // volumes may not use it.
  bool cluster_wide = false;
};

const std::vector<RouteSpec>& v1_routes();

// Optional API features this build serves, for /v1/status "features".
const std::vector<std::string>& api_features();

struct RouteMatch {
  const RouteSpec* route = nullptr;  // set when the path and the method match
  bool path_known = false;           // some template matches the path
  std::string allow;                 // the methods of the templates that match the path
};

// Matches decoded path segments ("v1", "status") and a method against the table.
RouteMatch match_v1_route(const std::string& method, const std::vector<std::string>& segments);

}  // namespace caesium::daemon
