// ApiHandler, part 3: Chronos's /timers (docs/chronos.md).  What a Chronos client sees:
//   POST   /timers        200, Location: /timers/<id>, empty body
//   PUT    /timers/<id>   200, Location: /timers/<id> (creates the timer if absent, as Chronos)
//   DELETE /timers/<id>   200 (also for an unknown id: deletes are idempotent in Chronos)
//   a bad body            400 with {"error", "field"}
// Writes are answered once durable on this replica, like every API write.
#include "node/daemon/api/api.h"
#include "node/daemon/api/api_internal.h"
#include "node/daemon/api/chronos.h"

namespace caesium::daemon {

using namespace api_detail;

namespace {

ServerResponse located(const std::string& id) { return location_response(200, "/timers/" + id); }

}  // namespace

ApiAction ApiHandler::route_chronos(const ServerRequest& req, const std::vector<std::string>& seg) {
  ++counters_.chronos_requests;
  if (options_.chronos_volume.empty()) {
    return respond(error_response(404, "the Chronos API is off on this node (set api.chronos_volume)", "path"));
  }
  if (options_.chronos_requires_token) {
    // Chronos clients send no token; a node that wants one anyway treats /timers as
    // entry writes to the Chronos volume.
    const ApiToken* who = authenticate(req);
    if (who == nullptr) return unauthorized(req);
    if (auto refused = out_of_scope(*who, Scope::kWrite, options_.chronos_volume, false)) return std::move(*refused);
  }
  const bool collection = seg.size() == 1 || (seg.size() == 2 && seg[1].empty());
  const bool one = seg.size() == 2 && !seg[1].empty();
  if (!collection && !one) return respond(error_response(404, "no such route: " + req.path, "path"));
  if (collection && req.method != "POST") return method_not_allowed("POST");
  if (one && req.method != "PUT" && req.method != "DELETE") return method_not_allowed("PUT, DELETE");
  if (one && !valid_chronos_id(seg[1])) {
    return respond(error_response(404, "'" + seg[1] + "' is not a timer id", "id"));
  }
  if (auto elsewhere = locate(req, options_.chronos_volume)) return std::move(*elsewhere);
  if (one && req.method == "DELETE") return chronos_delete(req, seg[1]);
  return chronos_put(req, one ? seg[1] : std::string());
}

ApiAction ApiHandler::chronos_put(const ServerRequest& req, std::string id) {
  auto timer = parse_chronos_timer(req.body);
  if (!timer) return respond(error_response(400, timer.error().message, timer.error().field));
  // A new timer's id is made here, on the replica, so a forwarded POST gets one id.
  if (id.empty()) id = chronos_timer_id(backend_.random64(), timer->replication_factor.value_or(2));
  const std::string& volume = options_.chronos_volume;
  const std::string entity(kChronosEntity);
  if (chronos_never_pops(*timer)) {
    // Chronos accepts a repeat-for shorter than the interval and never pops it; the
    // nearest thing here is "no timer under this id" (an update of a live timer to such
    // a definition stops it).
    if (!backend_.get_entry(volume, entity, id)) return respond(located(id));
    auto ack = backend_.delete_entry(volume, entity, id, false);
    if (!ack) return respond(located(id));
    return await_write(*ack, volume, 1, located(id));
  }
  const Clock now = backend_.now();
  auto entry = chronos_entry(*timer, id, now.utc_ms, backend_.node_id());
  if (!entry) return respond(error_response(400, entry.error().message, entry.error().field));
  auto ack = backend_.put_entry(volume, *entry, false);
  if (!ack) return respond(error_response(503, ack.error().message, ack.error().field));
  return await_write(*ack, volume, 1, located(id));
}

ApiAction ApiHandler::chronos_delete(const ServerRequest& req, const std::string& id) {
  (void)req;
  const std::string& volume = options_.chronos_volume;
  const std::string entity(kChronosEntity);
  ServerResponse ok;
  ok.status = 200;
  ok.content_type.clear();
  if (!backend_.get_entry(volume, entity, id)) return respond(ok);
  auto ack = backend_.delete_entry(volume, entity, id, false);
  if (!ack) return respond(ok);  // gone meanwhile: as good as deleted
  return await_write(*ack, volume, 1, ok);
}

}  // namespace caesium::daemon
