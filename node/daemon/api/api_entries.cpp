// ApiHandler, part 2: entries (put, get, delete, list), occurrence history and the
// cluster config.  Every route here runs on a replica of the volume (api.cpp forwards
// the others).
#include <algorithm>

#include "node/daemon/api/api.h"
#include "node/daemon/api/api_internal.h"
#include "schedule/entry_json.h"
#include "schedule/timing.h"

namespace caesium::daemon {

using nlohmann::json;
using namespace api_detail;

namespace {

std::string entry_path(const std::string& volume, const std::string& entity, const std::string& name) {
  return "/v1/volumes/" + volume + "/entities/" + entity + "/schedule/" + name;
}

// ?w=N: 1..(replicas of the volume).  Absent = 1.
Result<size_t> write_quorum(const ServerRequest& req, const node::ClusterConfig& config, const std::string& volume) {
  Status qs;
  auto w = query_param(req, "w", qs);
  if (!qs.ok()) return qs.error();
  if (!w) return size_t{1};
  const node::VolumeSpec* spec = config.volume(volume);
  const size_t replicas = spec == nullptr ? 1 : std::max<size_t>(1, spec->replicas.size());
  auto n = parse_count(*w, "w", 1, replicas);
  if (!n) {
    return Error("w must be between 1 and " + std::to_string(replicas) + " (volume '" + volume + "' has " +
                     std::to_string(replicas) + " replicas)",
                 "w");
  }
  return n;
}

// ?limit=N: absent = `fallback`; above `max` is cut to `max` (a client asking for more
// than a page holds gets a full page and a cursor).
Result<size_t> read_limit(const ServerRequest& req, size_t fallback, size_t max) {
  Status qs;
  const auto text = query_param(req, "limit", qs);
  if (!qs.ok()) return qs.error();
  if (!text) return fallback;
  auto n = parse_count(*text, "limit", 1, 999'999'999);
  if (!n) return n.error();
  return std::min(*n, max);
}

constexpr size_t kMaxUpcoming = 100;

// A page of entries read one longer than `limit` (the extra one tells whether there is a
// next page): cut to `limit`; the cursor of the next page (its ?after=), or null.
json cut_page(std::vector<schedule::Entry>& entries, size_t limit) {
  if (entries.size() <= limit) return nullptr;
  entries.resize(limit);
  return schedule::entry_key(entries.back());
}

// The body of a control (pause, resume, trigger): none, or an empty JSON object.  (A
// discarded parse compares unequal to nothing in nlohmann::json, so it is tested first.)
Status no_body(const ServerRequest& req, const std::string& verb) {
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos) return {};
  const json parsed = json::parse(req.body, nullptr, false);
  if (!parsed.is_discarded() && parsed == json::object()) return {};
  return Error("POST .../" + verb + " takes no body (or an empty JSON object)", "body");
}

}  // namespace

json ApiHandler::entry_json(const std::string& volume, const schedule::Entry& entry) const {
  json j = schedule::entry_to_json(entry);
  std::optional<int64_t> next = backend_.next_occurrence(volume, schedule::entry_key(entry));
  if (!next) next = schedule::next_occurrence(entry, backend_.now().utc_ms);
  j["next"] = next ? json(format_rfc3339_utc(*next)) : json(nullptr);
  return j;
}

ApiAction ApiHandler::entry_get(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                const std::string& name) {
  Status qs;
  const auto upcoming_text = query_param(req, "upcoming", qs);
  if (!qs.ok()) return respond(error_response(400, qs.error().message, qs.error().field));
  size_t upcoming = 0;
  if (upcoming_text) {
    auto n = parse_count(*upcoming_text, "upcoming", 1, kMaxUpcoming);
    if (!n) return respond(error_response(400, n.error().message, n.error().field));
    upcoming = *n;
  }
  auto e = backend_.get_entry(volume, entity, name);
  if (!e) {
    return respond(error_response(404, "no entry '" + name + "' for entity '" + entity + "' in volume '" + volume + "'",
                                  "name"));
  }
  json j = entry_json(volume, *e);
  if (upcoming > 0) {
    // From the scheduler's next occurrence on (what "next" says), by the entry's timing.
    json list = json::array();
    std::optional<int64_t> at = backend_.next_occurrence(volume, schedule::entry_key(*e));
    if (!at) at = schedule::next_occurrence(*e, backend_.now().utc_ms);
    while (at && list.size() < upcoming) {
      list.push_back(format_rfc3339_utc(*at));
      at = schedule::next_occurrence(*e, *at);
    }
    j["upcoming"] = std::move(list);
  }
  return respond(json_response(200, j));
}

ApiAction ApiHandler::entry_put(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                const std::string& name) {
  auto w = write_quorum(req, backend_.cluster_config(), volume);
  if (!w) return respond(error_response(400, w.error().message, w.error().field));
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return respond(error_response(400, "the body is not valid JSON", "body"));
  if (!body.is_object()) return respond(error_response(400, "the body must be a JSON object (the entry's fields)", "body"));
  // What GET adds beyond the entry's own fields is accepted back and ignored, so a
  // GET-edit-PUT round trip works.
  body.erase("next");
  body.erase("upcoming");
  const Clock now = backend_.now();
  auto entry = schedule::entry_from_json(body, entity, name, now.utc_ms, backend_.node_id());
  if (!entry) return respond(error_response(400, entry.error().message, entry.error().field));
  const std::optional<schedule::Entry> existing = backend_.get_entry(volume, entity, name);
  const bool existed = existing.has_value();
  // The manual occurrences are the server's (a PUT's `triggers` is ignored): an edit keeps
  // them, so a retried trigger still finds its Idempotency-Key.
  if (existing) entry->triggers = existing->triggers;
  auto ack = backend_.put_entry(volume, *entry, *w > 1);
  if (!ack) return respond(error_response(400, ack.error().message, ack.error().field));
  ServerResponse r = json_response(existed ? 200 : 201, entry_json(volume, *entry));
  if (!existed) r.headers.emplace_back("Location", entry_path(volume, entity, name));
  return await_write(*ack, volume, *w, std::move(r));
}

ApiAction ApiHandler::entry_pause(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                  const std::string& name, bool paused) {
  auto w = write_quorum(req, backend_.cluster_config(), volume);
  if (!w) return respond(error_response(400, w.error().message, w.error().field));
  if (Status b = no_body(req, paused ? "pause" : "resume"); !b.ok()) {
    return respond(error_response(400, b.error().message, "body"));
  }
  auto ack = backend_.set_paused(volume, entity, name, paused, *w > 1);
  if (!ack) return respond(error_response(404, ack.error().message, ack.error().field));
  auto entry = backend_.get_entry(volume, entity, name);
  if (!entry) return respond(error_response(404, "no entry '" + name + "' for entity '" + entity + "'", "name"));
  return await_write(*ack, volume, *w, json_response(200, entry_json(volume, *entry)));
}

ApiAction ApiHandler::bulk_pause(const ServerRequest& req, const std::string& volume, bool paused) {
  auto w = write_quorum(req, backend_.cluster_config(), volume);
  if (!w) return respond(error_response(400, w.error().message, w.error().field));
  if (Status b = no_body(req, paused ? "pause" : "resume"); !b.ok()) {
    return respond(error_response(400, b.error().message, "body"));
  }
  Status qs;
  const auto prefix = query_param(req, "prefix", qs);
  const auto entity = query_param(req, "entity", qs);
  const auto name_prefix = query_param(req, "name_prefix", qs);
  const std::string after = query_param(req, "after", qs).value_or("");
  if (!qs.ok()) return respond(error_response(400, qs.error().message, qs.error().field));
  // Which entries: every entity starting with `prefix` (as the list's ?prefix=), or the
  // entries of one entity whose name starts with `name_prefix`.  One of the two must be
  // named, so that a mistyped parameter does not pause a whole volume.
  if (prefix.has_value() == entity.has_value()) {
    return respond(error_response(400, "give either ?prefix=ENTITY-PREFIX or ?entity=ENTITY[&name_prefix=NAME-PREFIX]",
                                  prefix ? "entity" : "prefix"));
  }
  if (name_prefix && !entity) return respond(error_response(400, "name_prefix goes with ?entity=", "name_prefix"));
  std::string scan = prefix.value_or("");
  if (entity) {
    if (Status s = schedule::validate_identifier(*entity, "entity"); !s.ok()) {
      return respond(error_response(400, s.error().message, s.error().field));
    }
    scan = schedule::entry_key(*entity, name_prefix.value_or(""));
  }
  auto limit = read_limit(req, options_.default_list_limit, options_.max_list_limit);
  if (!limit) return respond(error_response(400, limit.error().message, limit.error().field));
  std::vector<schedule::Entry> entries = backend_.list_entries(volume, scan, after, *limit + 1);
  json next = cut_page(entries, *limit);
  // Each entry is its own write; the answer waits until every one of them is held by w
  // replicas.  An entry already in the asked state is left as it is (no new version).
  json changed = json::array();
  size_t unchanged = 0;
  std::optional<node::WriteAck> last;
  std::vector<std::pair<std::string, schedule::Version>> also;
  for (const auto& e : entries) {
    if (e.paused == paused) {
      ++unchanged;
      continue;
    }
    auto ack = backend_.set_paused(volume, e.entity, e.name, paused, *w > 1);
    if (!ack) return respond(error_response(500, ack.error().message, ack.error().field));
    if (last) also.emplace_back(last->record.key, last->record.version);
    last = std::move(*ack);
    changed.push_back(schedule::entry_key(e));
  }
  json body = {{"volume", volume},
               {"paused", paused},
               {"changed", std::move(changed)},
               {"unchanged", unchanged},
               {"next", std::move(next)}};
  if (!last) return respond(json_response(200, body));
  ApiAction a = await_write(*last, volume, *w, json_response(200, body));
  a.wait.also = std::move(also);
  return a;
}

ApiAction ApiHandler::entry_trigger(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                    const std::string& name) {
  auto w = write_quorum(req, backend_.cluster_config(), volume);
  if (!w) return respond(error_response(400, w.error().message, w.error().field));
  if (Status b = no_body(req, "trigger"); !b.ok()) return respond(error_response(400, b.error().message, "body"));
  std::string_view key;
  if (const std::string* k = req.header("idempotency-key")) {
    if (Status s = schedule::validate_idempotency_key(*k); !s.ok()) {
      return respond(error_response(400, s.error().message, s.error().field));
    }
    key = *k;
  }
  auto ack = backend_.trigger_entry(volume, entity, name, key, *w > 1);
  if (!ack) {
    const std::string& field = ack.error().field;
    const int status = field == "paused" ? 409 : field == "triggers" ? 429 : field == "name" ? 404 : 400;
    return respond(error_response(status, ack.error().message, field));
  }
  auto entry = backend_.get_entry(volume, entity, name);
  if (!entry) return respond(error_response(404, "no entry '" + name + "' for entity '" + entity + "'", "name"));
  ++(ack->existing ? counters_.trigger_repeats : counters_.triggers);
  json j = {{"id", ack->trigger.id},
            {"scheduled", format_rfc3339_utc(ack->trigger.at_utc_ms)},
            {"scheduled_ms", ack->trigger.at_utc_ms},
            {"repeat", ack->existing},
            {"entry", entry_json(volume, *entry)}};
  return await_write(ack->ack, volume, *w, json_response(200, j));
}

ApiAction ApiHandler::entry_delete(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                   const std::string& name) {
  auto w = write_quorum(req, backend_.cluster_config(), volume);
  if (!w) return respond(error_response(400, w.error().message, w.error().field));
  if (!backend_.get_entry(volume, entity, name)) {
    return respond(error_response(404, "no entry '" + name + "' for entity '" + entity + "' in volume '" + volume + "'",
                                  "name"));
  }
  auto ack = backend_.delete_entry(volume, entity, name, *w > 1);
  if (!ack) return respond(error_response(404, ack.error().message, ack.error().field));
  ServerResponse r;
  r.status = 204;
  r.content_type.clear();
  return await_write(*ack, volume, *w, std::move(r));
}

ApiAction ApiHandler::entry_list(const ServerRequest& req, const std::string& volume) {
  Status qs;
  const std::string prefix = query_param(req, "prefix", qs).value_or("");
  const std::string after = query_param(req, "after", qs).value_or("");
  if (!qs.ok()) return respond(error_response(400, qs.error().message, qs.error().field));
  auto limit = read_limit(req, options_.default_list_limit, options_.max_list_limit);
  if (!limit) return respond(error_response(400, limit.error().message, limit.error().field));
  std::vector<schedule::Entry> entries = backend_.list_entries(volume, prefix, after, *limit + 1);
  json next = cut_page(entries, *limit);
  json list = json::array();
  for (const auto& e : entries) list.push_back(entry_json(volume, e));
  return respond(json_response(200, {{"volume", volume}, {"entries", std::move(list)}, {"next", std::move(next)}}));
}

ApiAction ApiHandler::entry_history(const ServerRequest& req, const std::string& volume, const std::string& entity,
                                    const std::string& name) {
  auto limit = read_limit(req, options_.default_history_limit, options_.max_history_limit);
  if (!limit) return respond(error_response(400, limit.error().message, limit.error().field));
  auto occurrences = backend_.history(volume, entity, name, *limit);
  const std::optional<schedule::Entry> entry = backend_.get_entry(volume, entity, name);
  if (occurrences.empty() && !entry) {
    return respond(error_response(404, "no entry '" + name + "' for entity '" + entity + "' in volume '" + volume +
                                           "' and no occurrence history for it",
                                  "name"));
  }
  return respond(json_response(200, {{"volume", volume},
                                     {"entity", entity},
                                     {"name", name},
                                     {"occurrences", history_json(occurrences, entry ? &*entry : nullptr)}}));
}

ApiAction ApiHandler::config_put(const ServerRequest& req) {
  auto decoded = node::decode_cluster_config(req.body);
  if (!decoded) {
    const std::string field = decoded.error().field.empty() ? "body" : decoded.error().field;
    return respond(error_response(400, decoded.error().message, field));
  }
  auto config = node::normalize(std::move(*decoded));
  if (!config) return respond(error_response(400, config.error().message, config.error().field));
  const uint64_t current = backend_.cluster_config().epoch;
  if (config->epoch <= current) {
    json j = {{"error", "a new cluster config needs an epoch above the current one (" + std::to_string(current) + ")"},
              {"field", "epoch"},
              {"current_epoch", current}};
    return respond(json_response(409, j));
  }
  // ?force=true: apply although a replica lags, has not filled or has not been heard holding
  // the epoch, or a majority of the nodes is not alive (replicas lost for good).
  Status qs;
  const auto force_text = query_param(req, "force", qs);
  if (!qs.ok()) return respond(error_response(400, qs.error().message, qs.error().field));
  if (force_text && *force_text != "true" && *force_text != "false") {
    return respond(error_response(400, "force must be true or false", "force"));
  }
  const bool force = force_text && *force_text == "true";
  if (Status s = node::check_config_replicas(*config); !s.ok()) {
    return respond(error_response(400, s.error().message, s.error().field));
  }
  // A replica change that cannot follow the current config in one step, or that comes
  // while a replica still holds an older epoch, conflicts with the cluster's state: 409.
  if (Status s = node::check_config_change(backend_.cluster_config(), *config); !s.ok()) {
    return respond(error_response(409, s.error().message, s.error().field));
  }
  auto ack = backend_.apply_config(*config, force);
  if (!ack) return respond(config_response(ack.error()));
  ApiAction a = await_write(*ack, "", 1, config_response(Status::success()));
  if (ack->config_proposal != 0) {
    // Agreed by a majority of the nodes first; the node gives up after 5 s.
    a.wait.config_proposal = ack->config_proposal;
    a.wait.deadline_mono_ms = std::max(a.wait.deadline_mono_ms, backend_.now().mono_ms + 10'000);
  }
  return a;
}

ServerResponse ApiHandler::config_response(const Status& outcome) const {
  if (outcome.ok()) return json_response(200, json::parse(backend_.cluster_config().encode()));
  const auto& e = outcome.error();
  // What is left to refuse depends on the cluster's state (a lagging or unfilled
  // replica, another change of the same epoch), not on the document: 409, and the same
  // request (or one on top of the other change) succeeds later.
  const bool state = e.field == "epoch" || e.field == "volumes.replicas";
  // Too few nodes alive, or answering, to change the config safely: unavailable for now.
  const int code = e.field == "nodes" ? 503 : state ? 409 : 400;
  return error_response(code, e.message, e.field);
}

}  // namespace caesium::daemon
