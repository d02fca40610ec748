// Chronos timer bodies and their mapping to entries (chronos.h).
#include "node/daemon/api/chronos.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "schedule/timing.h"

namespace caesium::daemon {

namespace {

using nlohmann::json;

constexpr int64_t kMaxSeconds = schedule::kMaxEntryDurationMs / 1000;

// A whole number of seconds in [0, kMaxSeconds] (Chronos takes integers only).
Result<int64_t> seconds_field(const json& j, const char* field) {
  if (!j.is_number_integer()) return Error(std::string(field) + " must be a whole number of seconds", field);
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(kMaxSeconds)) {
      return Error(std::string(field) + " must be at most " + std::to_string(kMaxSeconds) + " seconds", field);
    }
    return static_cast<int64_t>(v);
  }
  const int64_t v = j.get<int64_t>();
  if (v < 0) return Error(std::string(field) + " must not be negative", field);
  if (v > kMaxSeconds) {
    return Error(std::string(field) + " must be at most " + std::to_string(kMaxSeconds) + " seconds", field);
  }
  return v;
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = (s[i] >= 'A' && s[i] <= 'Z') ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != prefix[i]) return false;
  }
  return true;
}

Result<std::string> callback_uri(std::string uri) {
  const char* field = "callback.http.uri";
  if (uri.empty()) return Error("callback.http.uri must not be empty", field);
  if (uri.size() > 8192) return Error("callback.http.uri is longer than 8192 bytes", field);
  for (char ch : uri) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F) return Error("callback.http.uri contains a space or a control character", field);
  }
  if (starts_with_nocase(uri, "http://") || starts_with_nocase(uri, "https://")) return uri;
  if (uri.find("://") != std::string::npos) {
    return Error("callback.http.uri must be an http:// or https:// URL", field);
  }
  // Chronos hands the URI to libcurl, which assumes http:// when there is no scheme;
  // clients written against it ("localhost:1234/callback") keep working.
  return "http://" + uri;
}

}  // namespace

Result<ChronosTimer> parse_chronos_timer(std::string_view body) {
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) return Error("the body is not valid JSON", "body");
  if (!j.is_object()) return Error("the body must be a JSON object", "body");
  ChronosTimer t;

  auto timing = j.find("timing");
  if (timing == j.end()) return Error("the timer has no \"timing\" object", "timing");
  if (!timing->is_object()) return Error("timing must be an object", "timing");
  auto interval = timing->find("interval");
  if (interval == timing->end()) return Error("timing.interval is required", "timing.interval");
  auto iv = seconds_field(*interval, "timing.interval");
  if (!iv) return iv.error();
  t.interval_s = *iv;
  t.repeat_for_s = t.interval_s;
  if (auto rf = timing->find("repeat-for"); rf != timing->end()) {
    auto r = seconds_field(*rf, "timing.repeat-for");
    if (!r) return r.error();
    t.repeat_for_s = *r;
  }
  if (t.interval_s == 0 && t.repeat_for_s != 0) {
    return Error("an interval of 0 pops once, at once; it cannot repeat for " + std::to_string(t.repeat_for_s) +
                     " s (set repeat-for to 0 or the interval above 0)",
                 "timing.repeat-for");
  }

  auto callback = j.find("callback");
  if (callback == j.end()) return Error("the timer has no \"callback\" object", "callback");
  if (!callback->is_object()) return Error("callback must be an object", "callback");
  auto http = callback->find("http");
  if (http == callback->end()) return Error("callback.http is required (the only callback Chronos supports)", "callback.http");
  if (!http->is_object()) return Error("callback.http must be an object", "callback.http");
  auto uri = http->find("uri");
  if (uri == http->end() || !uri->is_string()) return Error("callback.http.uri must be a string", "callback.http.uri");
  auto u = callback_uri(uri->get<std::string>());
  if (!u) return u.error();
  t.uri = std::move(*u);
  if (auto opaque = http->find("opaque"); opaque != http->end()) {
    if (!opaque->is_string()) return Error("callback.http.opaque must be a string", "callback.http.opaque");
    t.opaque = opaque->get<std::string>();
  }

  if (auto rel = j.find("reliability"); rel != j.end()) {
    if (!rel->is_object()) return Error("reliability must be an object", "reliability");
    if (auto rf = rel->find("replication-factor"); rf != rel->end()) {
      const char* field = "reliability.replication-factor";
      const std::string msg = "reliability.replication-factor must be a whole number from 0 to 1000000";
      if (!rf->is_number_integer()) return Error(msg, field);
      if (rf->is_number_unsigned() ? rf->get<uint64_t>() > 1'000'000 : rf->get<int64_t>() < 0) return Error(msg, field);
      t.replication_factor = rf->get<int64_t>();
    }
  }
  return t;
}

bool chronos_never_pops(const ChronosTimer& t) { return t.interval_s > 0 && t.repeat_for_s < t.interval_s; }

Result<schedule::Entry> chronos_entry(const ChronosTimer& t, const std::string& id, int64_t now_utc_ms,
                                      const std::string& origin) {
  if (!valid_chronos_id(id)) return Error("'" + id + "' cannot name a timer", "id");
  schedule::Entry e;
  e.entity = std::string(kChronosEntity);
  e.name = id;
  schedule::Timer timer;
  timer.kind = schedule::TimerKind::interval;
  timer.interval_ms = t.interval_s * 1000;
  timer.repeat_for_ms = t.repeat_for_s * 1000;
  e.timing = timer;
  e.handler = std::string(kChronosHandler);
  e.semantics = schedule::Semantics::at_least_once;
  e.origin = origin;
  e.created_utc_ms = now_utc_ms;
  json payload = {{"uri", t.uri}, {"opaque", t.opaque}};
  if (t.replication_factor) payload["replication_factor"] = *t.replication_factor;
  // Invalid UTF-8 cannot reach here (the body parsed as JSON), so dump cannot throw.
  e.payload = payload.dump();
  if (e.payload.size() > schedule::kMaxPayloadBytes) {
    return Error("the callback (uri + opaque data) is larger than the " + std::to_string(schedule::kMaxPayloadBytes) +
                     "-byte limit",
                 "callback.http.opaque");
  }
  if (Status s = schedule::validate(e); !s.ok()) return s.error();
  return e;
}

Result<ChronosCallback> chronos_callback(std::string_view payload) {
  const json j = json::parse(payload.begin(), payload.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error("the chronos entry's payload is not a JSON object", "payload");
  auto uri = j.find("uri");
  if (uri == j.end() || !uri->is_string()) return Error("the chronos entry's payload has no \"uri\" string", "payload");
  ChronosCallback cb;
  auto u = callback_uri(uri->get<std::string>());
  if (!u) return u.error();
  cb.uri = std::move(*u);
  if (auto opaque = j.find("opaque"); opaque != j.end()) {
    if (!opaque->is_string()) return Error("the chronos entry's \"opaque\" is not a string", "payload");
    cb.opaque = opaque->get<std::string>();
  }
  return cb;
}

std::string chronos_timer_id(uint64_t random, int64_t replication_factor) {
  char hex[17] = {};
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random));
  return std::string(hex) + "-" + std::to_string(replication_factor < 0 ? 0 : replication_factor);
}

bool valid_chronos_id(std::string_view id) { return schedule::validate_identifier(id, "id").ok(); }

}  // namespace caesium::daemon
