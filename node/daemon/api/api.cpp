// ApiHandler, part 1: authentication, routing, forwarding decisions and the shared
// helpers.  Entry, history and config routes: api_entries.cpp.  Chronos: api_chronos.cpp.
#include "node/daemon/api/api.h"

#include <sodium.h>

#include <algorithm>

#include "node/daemon/api/api_internal.h"

namespace caesium::daemon {

using nlohmann::json;

ServerResponse json_response(int status, const json& body) {
  ServerResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ServerResponse error_response(int status, const std::string& message, const std::string& field) {
  json j = {{"error", message}};
  if (!field.empty()) j["field"] = field;
  return json_response(status, j);
}

bool token_matches(std::string_view presented, std::string_view expected) {
  if (expected.empty()) return false;
  // Hash both sides so the comparison is over equal-length digests: neither the
  // token's length nor the position of the first difference shows in the timing.
  unsigned char a[crypto_generichash_BYTES];
  unsigned char b[crypto_generichash_BYTES];
  crypto_generichash(a, sizeof a, reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), nullptr, 0);
  crypto_generichash(b, sizeof b, reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), nullptr, 0);
  return sodium_memcmp(a, b, sizeof a) == 0;
}

std::optional<std::string> bearer_token(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  if (v.size() < 7 || !equals_ignore_case(v.substr(0, 6), "bearer") || v[6] != ' ') return std::nullopt;
  v.remove_prefix(7);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  return std::string(v);
}

std::vector<ReplicaContact> forward_order(std::vector<ReplicaContact> contacts, const std::string& self) {
  std::erase_if(contacts, [&](const ReplicaContact& c) { return c.node == self || !c.reachable || c.api_addr.empty(); });
  std::sort(contacts.begin(), contacts.end(), [](const ReplicaContact& a, const ReplicaContact& b) {
    if (a.master != b.master) return a.master;
    return a.node < b.node;
  });
  return contacts;
}

namespace api_detail {

ApiAction respond(ServerResponse r) {
  ApiAction a;
  a.kind = ApiAction::Kind::kRespond;
  a.response = std::move(r);
  return a;
}

ServerResponse location_response(int status, const std::string& location) {
  ServerResponse r;
  r.status = status;
  r.content_type.clear();
  r.headers.emplace_back("Location", location);
  return r;
}

ApiAction method_not_allowed(const std::string& allow) {
  ServerResponse r = error_response(405, "method not allowed here; use " + allow);
  r.headers.emplace_back("Allow", allow);
  return respond(std::move(r));
}

std::optional<std::string> query_param(const ServerRequest& req, std::string_view name, Status& status) {
  std::vector<std::pair<std::string, std::string>> params;
  if (!parse_query(req.query, params)) {
    status = Error("the query string has an invalid %-escape", "query");
    return std::nullopt;
  }
  for (auto& [n, v] : params) {
    if (n == name) return v;
  }
  return std::nullopt;
}

Result<size_t> parse_count(const std::string& text, const std::string& field, size_t min, size_t max) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Error(field + " must be a whole number", field);
  }
  const size_t v = std::stoul(text);
  if (v < min || v > max) {
    return Error(field + " must be between " + std::to_string(min) + " and " + std::to_string(max), field);
  }
  return v;
}

}  // namespace api_detail

using namespace api_detail;

ApiHandler::ApiHandler(ApiOptions options, ApiBackend& backend) : options_(std::move(options)), backend_(backend) {
  set_tokens(options_.token, std::move(options_.tokens));
}

void ApiHandler::set_tokens(std::string token, TokenSet tokens) {
  // The api.token_file token is an unlimited admin, as it was before scopes.
  if (!token.empty()) tokens.add("token_file", token, Scope::kAdmin);
  options_.token = std::move(token);
  options_.tokens = std::move(tokens);
}

ApiAction ApiHandler::handle(const ServerRequest& request) {
  try {
    return route(request);
  } catch (const std::exception& e) {
    // A bug, not bad input (every parser here reports errors as values); answer rather
    // than take the node down.
    return respond(error_response(500, std::string("internal error: ") + e.what()));
  }
}

const ApiToken* ApiHandler::authenticate(const ServerRequest& req) const {
  const std::string* auth = req.header("authorization");
  if (auth == nullptr) return nullptr;
  auto token = bearer_token(*auth);
  if (!token) return nullptr;
  return options_.tokens.find(*token);
}

std::optional<ApiAction> ApiHandler::out_of_scope(const ApiToken& token, Scope scope, const std::string& volume,
                                                  bool cluster_wide) {
  std::string why;
  std::string field = "scope";
  if (token.scope < scope) {
    why = "the token '" + token.name + "' has the " + scope_name(token.scope) + " scope; this needs " +
          scope_name(scope);
  } else if ((cluster_wide && !token.volumes.empty()) || (!volume.empty() && !token.allows_volume(volume))) {
    std::string list;
    for (const auto& v : token.volumes) list += (list.empty() ? "" : ", ") + v;
    why = "the token '" + token.name + "' is limited to volumes [" + list + "]" +
          (cluster_wide ? "; this changes every volume" : "; this is about volume '" + volume + "'");
    field = "volume";
  } else {
    return std::nullopt;
  }
  ++counters_.scope_refusals;
  return respond(error_response(403, why, field));
}

ApiAction ApiHandler::route(const ServerRequest& req) {
  std::vector<std::string> seg;
  if (!split_path(req.path, seg)) return respond(error_response(400, "the path has an invalid %-escape", "path"));
  const std::string& top = seg[0];
  if (top == "healthz" && seg.size() == 1) {
    if (req.method != "GET") return method_not_allowed("GET");
    return respond(json_response(200, {{"ok", true}, {"node", backend_.node_id()}}));
  }
  if (top == "metrics" && seg.size() == 1) {
    if (req.method != "GET") return method_not_allowed("GET");
    if (options_.metrics_requires_token) {
      const ApiToken* who = authenticate(req);
      if (who == nullptr) return unauthorized(req);
      if (auto refused = out_of_scope(*who, Scope::kRead, "", false)) return std::move(*refused);
    }
    ServerResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = backend_.metrics_text();
    return respond(std::move(r));
  }
  if (top == "timers") return route_chronos(req, seg);
  if (top == "ui" || (top.empty() && seg.size() == 1)) return route_ui(req, seg);
  if (top == "v1") {
    const ApiToken* who = authenticate(req);
    if (who == nullptr) return unauthorized(req);
    return route_v1(req, seg, *who);
  }
  return respond(error_response(404, "no such route: " + req.path, "path"));
}

ApiAction ApiHandler::unauthorized(const ServerRequest& req) {
  ++counters_.auth_failures;
  const bool presented = req.header("authorization") != nullptr;
  std::string why;
  if (options_.tokens.empty()) {
    why = "this node has no API token configured (api.token_file, api.tokens_file), so it refuses every "
          "authenticated request";
  } else if (presented) {
    why = "the bearer token is not valid";
  } else {
    why = "an Authorization: Bearer <token> header is required";
  }
  ServerResponse r = error_response(401, why);
  r.headers.emplace_back("WWW-Authenticate",
                         presented ? R"(Bearer realm="caesium", error="invalid_token")" : R"(Bearer realm="caesium")");
  return respond(std::move(r));
}

ApiAction ApiHandler::route_v1(const ServerRequest& req, const std::vector<std::string>& seg,
                               const ApiToken& token) {
  const RouteMatch m = match_v1_route(req.method, seg);
  if (!m.path_known) return respond(error_response(404, "no such route: " + req.path, "path"));
  if (m.route == nullptr) return method_not_allowed(m.allow);
  const bool volume_route = seg.size() >= 3 && seg[1] == "volumes";
  if (volume_route && !node::valid_volume_name(seg[2])) {
    return respond(error_response(400, "'" + seg[2] + "' is not a volume name ([A-Za-z0-9._:-], 1..128 bytes)", "volume"));
  }
  if (auto refused = out_of_scope(token, m.route->scope, volume_route ? seg[2] : "", m.route->cluster_wide)) {
    return std::move(*refused);
  }
  switch (m.route->id) {
    case RouteId::kStatus: {
      json status = backend_.status();
      status["features"] = api_features();
      return respond(json_response(200, status));
    }
    case RouteId::kWhoami:
      return respond(json_response(200, {{"node", backend_.node_id()},
                                         {"token", token.name},
                                         {"scope", scope_name(token.scope)},
                                         {"volumes", token.volumes.empty() ? json(nullptr) : json(token.volumes)},
                                         {"features", api_features()}}));
    case RouteId::kConfigGet:
      return respond(json_response(200, json::parse(backend_.cluster_config().encode())));
    case RouteId::kConfigPut:
      return config_put(req);
    default:
      return route_volume(req, seg, *m.route);
  }
}

ApiAction ApiHandler::route_volume(const ServerRequest& req, const std::vector<std::string>& seg,
                                   const RouteSpec& route) {
  const std::string& volume = seg[2];
  const bool entry = route.id != RouteId::kEntryList && route.id != RouteId::kBulkPause &&
                     route.id != RouteId::kBulkResume;
  if (entry) {
    for (const auto& [value, field] : {std::pair{&seg[4], "entity"}, std::pair{&seg[6], "name"}}) {
      if (Status s = schedule::validate_identifier(*value, field); !s.ok()) {
        return respond(error_response(400, s.error().message, s.error().field));
      }
    }
  }
  if (auto elsewhere = locate(req, volume)) return std::move(*elsewhere);
  switch (route.id) {
    case RouteId::kEntryList: return entry_list(req, volume);
    case RouteId::kEntryHistory: return entry_history(req, volume, seg[4], seg[6]);
    case RouteId::kEntryGet: return entry_get(req, volume, seg[4], seg[6]);
    case RouteId::kEntryPut: return entry_put(req, volume, seg[4], seg[6]);
    case RouteId::kEntryPause: return entry_pause(req, volume, seg[4], seg[6], true);
    case RouteId::kEntryResume: return entry_pause(req, volume, seg[4], seg[6], false);
    case RouteId::kBulkPause: return bulk_pause(req, volume, true);
    case RouteId::kBulkResume: return bulk_pause(req, volume, false);
    case RouteId::kEntryTrigger: return entry_trigger(req, volume, seg[4], seg[6]);
    default: return entry_delete(req, volume, seg[4], seg[6]);
  }
}

std::optional<ApiAction> ApiHandler::locate(const ServerRequest& req, const std::string& volume) {
  const node::ClusterConfig& config = backend_.cluster_config();
  if (config.volume(volume) == nullptr) {
    return respond(error_response(404, "there is no volume '" + volume + "' in the cluster config (epoch " +
                                           std::to_string(config.epoch) + ")",
                                  "volume"));
  }
  if (backend_.is_replica(volume)) return std::nullopt;
  if (const std::string* from = req.header(kForwardedHeader)) {
    // One hop only: the first node picked a replica by its view; if that node does not
    // replicate the volume either, the views disagree (a config change in flight) and
    // another hop could loop.
    return respond(error_response(503, "this request was forwarded by node " + *from + " to node " +
                                           backend_.node_id() + ", which does not replicate volume '" + volume +
                                           "' either (a config change may be in flight); retry",
                                  "volume"));
  }
  ApiAction a;
  a.kind = ApiAction::Kind::kForward;
  a.volume = volume;
  a.targets = forward_order(backend_.replica_contacts(volume), backend_.node_id());
  if (a.targets.empty()) {
    return respond(error_response(503, "node " + backend_.node_id() + " does not replicate volume '" + volume +
                                           "' and no replica of it is reachable with an API address",
                                  "volume"));
  }
  ++counters_.forwarded;
  return a;
}

std::vector<std::pair<std::string, std::string>> ApiHandler::forward_headers(const ServerRequest& req) const {
  std::vector<std::pair<std::string, std::string>> h;
  if (const std::string* auth = req.header("authorization")) h.emplace_back("Authorization", *auth);
  // A retried trigger must reach the replica with its key (POST .../trigger).
  if (const std::string* key = req.header("idempotency-key")) h.emplace_back("Idempotency-Key", *key);
  h.emplace_back("X-Caesium-Forwarded", backend_.node_id());
  return h;
}

ServerResponse ApiHandler::forward_failed_response(const std::string& volume, const std::vector<std::string>& failures) {
  ++counters_.forward_failures;
  std::string detail;
  for (const auto& f : failures) detail += (detail.empty() ? "" : "; ") + f;
  return error_response(503, "no replica of volume '" + volume + "' answered the forwarded request: " + detail,
                        "volume");
}

ApiAction ApiHandler::await_write(const node::WriteAck& ack, const std::string& volume, size_t replicas,
                                  ServerResponse response) const {
  ApiAction a;
  a.kind = ApiAction::Kind::kAwaitWrite;
  a.response = std::move(response);
  a.wait.durable_seq = ack.durable_seq;
  a.wait.volume = volume;
  a.wait.key = ack.record.key;
  a.wait.version = ack.record.version;
  a.wait.replicas = replicas;
  a.wait.deadline_mono_ms = backend_.now().mono_ms + options_.write_timeout_ms;
  return a;
}

ServerResponse ApiHandler::write_timeout_response(const WriteWait& wait, bool durable_here, size_t replicas_reached) {
  ++counters_.write_timeouts;
  json j = {{"error", durable_here ? "the write is durable on " + std::to_string(replicas_reached) + " of the " +
                                         std::to_string(wait.replicas) + " replicas asked for (w=" +
                                         std::to_string(wait.replicas) + ") after " +
                                         std::to_string(options_.write_timeout_ms) + " ms; it stays applied and "
                                         "anti-entropy will spread it"
                                   : "the write was applied but storage did not confirm it durable within " +
                                         std::to_string(options_.write_timeout_ms) + " ms"},
            {"field", "w"},
            {"durable", durable_here},
            {"replicas", replicas_reached},
            {"wanted", wait.replicas}};
  return json_response(503, j);
}

}  // namespace caesium::daemon
