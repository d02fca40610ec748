// Helpers shared by the ApiHandler's route files (api.cpp, api_entries.cpp,
// api_chronos.cpp).  Not part of the API's contract.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "node/daemon/api/api.h"

namespace caesium::daemon::api_detail {

ApiAction respond(ServerResponse r);
// An answer without a body that points at `location` (a Location header).
ServerResponse location_response(int status, const std::string& location);
// 405 with an Allow header.
ApiAction method_not_allowed(const std::string& allow);
// The decoded value of query parameter `name` (the first one), nullopt when absent.
// An undecodable query string sets `status` to an Error (and returns nullopt).
std::optional<std::string> query_param(const ServerRequest& req, std::string_view name, Status& status);
// A whole decimal number in [min, max]; the Error names `field`.
Result<size_t> parse_count(const std::string& text, const std::string& field, size_t min, size_t max);

// The occurrence history of one entry as JSON (docs/api.md "History"), most recent first.
// `entry` (null when deleted) tells manual occurrences (its triggers) apart: "manual": true
// and "trigger": the trigger's id.
nlohmann::json history_json(const std::vector<node::Node::OccurrenceHistory>& occurrences,
                             const schedule::Entry* entry = nullptr);

}  // namespace caesium::daemon::api_detail
