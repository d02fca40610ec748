#include "schedule/entry_json.h"

#include <array>
#include <cmath>

#include "base/base64.h"
#include "base/time.h"

namespace caesium::schedule {
namespace {

using nlohmann::json;

Error field_error(const std::string& field, const std::string& why) {
  return Error(field + ": " + why, field);
}

Result<std::string> get_string(const json& v, const std::string& field) {
  if (!v.is_string()) return field_error(field, std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

Result<int64_t> get_duration(const json& v, const std::string& field) {
  auto text = get_string(v, field);
  if (!text.ok()) return field_error(field, "expected a duration string such as \"30s\" or \"1h30m\"");
  auto ms = parse_duration_ms(*text);
  if (!ms.ok()) return field_error(field, ms.error().message);
  return *ms;
}

struct TimerFields {
  Timer timer;
  int64_t jitter_ms = 0;
};

Result<TimerFields> timer_from_json(const json& j) {
  if (!j.is_object()) return field_error("timer", std::string("expected an object, got ") + j.type_name());
  TimerFields out;
  Timer& t = out.timer;
  const char* kind_field = nullptr;
  bool has_repeat_for = false, has_count = false;
  auto set_kind = [&](TimerKind k, const char* field) -> Status {
    if (kind_field != nullptr) {
      return field_error(std::string("timer.") + field,
                         std::string("cannot be combined with \"") + kind_field + "\"; give one of at, after, interval");
    }
    kind_field = field;
    t.kind = k;
    return Status::success();
  };
  for (const auto& [key, v] : j.items()) {
    const std::string field = "timer." + key;
    if (key == "at") {
      if (Status s = set_kind(TimerKind::at, "at"); !s.ok()) return s.error();
      auto text = get_string(v, field);
      if (!text.ok()) return text.error();
      auto at = parse_rfc3339_ms(*text);
      if (!at.ok()) return field_error(field, at.error().message);
      t.at_utc_ms = *at;
    } else if (key == "after" || key == "interval") {
      const bool after = key == "after";
      if (Status s = set_kind(after ? TimerKind::after : TimerKind::interval, after ? "after" : "interval"); !s.ok()) {
        return s.error();
      }
      auto d = get_duration(v, field);
      if (!d.ok()) return d.error();
      (after ? t.after_ms : t.interval_ms) = *d;
    } else if (key == "repeat_for") {
      auto d = get_duration(v, field);
      if (!d.ok()) return d.error();
      t.repeat_for_ms = *d;
      has_repeat_for = true;
    } else if (key == "count") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0) {
        return field_error(field, "expected a whole number of pops >= 1");
      }
      t.count = v.get<uint64_t>();
      has_count = true;
    } else if (key == "jitter") {
      auto d = get_duration(v, field);
      if (!d.ok()) return d.error();
      out.jitter_ms = *d;
    } else {
      return field_error(field, "unknown field; expected at, after, interval, repeat_for, count or jitter");
    }
  }
  if (kind_field == nullptr) return field_error("timer", "expected one of \"at\", \"after\" or \"interval\"");
  if ((has_repeat_for || has_count) && t.kind != TimerKind::interval) {
    return field_error(has_count ? "timer.count" : "timer.repeat_for", "only applies to an \"interval\" timer");
  }
  if (has_repeat_for && has_count) return field_error("timer.count", "give repeat_for or count, not both");
  // Chronos: without repeat-for the timer pops once, after one interval.
  if (t.kind == TimerKind::interval && !has_repeat_for && !has_count) t.repeat_for_ms = t.interval_ms;
  return out;
}

template <class Enum, size_t N>
Result<Enum> get_enum(const json& v, const std::string& field, const std::array<std::pair<const char*, Enum>, N>& table) {
  auto text = get_string(v, field);
  std::string expected;
  for (const auto& [name, value] : table) {
    if (text.ok() && *text == name) return value;
    expected += expected.empty() ? name : std::string(" or ") + name;
  }
  return field_error(field, "expected " + expected);
}

constexpr std::array<std::pair<const char*, Semantics>, 2> kSemantics = {
    {{"at_least_once", Semantics::at_least_once}, {"at_most_once", Semantics::at_most_once}}};
constexpr std::array<std::pair<const char*, MisfirePolicy>, 3> kMisfire = {
    {{"skip", MisfirePolicy::skip}, {"fire_once", MisfirePolicy::fire_once}, {"fire_all", MisfirePolicy::fire_all}}};
constexpr std::array<std::pair<const char*, OverlapPolicy>, 3> kOverlap = {
    {{"allow", OverlapPolicy::allow}, {"forbid", OverlapPolicy::forbid}, {"replace", OverlapPolicy::replace}}};

// Read-only fields must agree with the request when present.
Status check_same(const json& v, const std::string& field, const std::string& expected) {
  auto text = get_string(v, field);
  if (!text.ok()) return text.error();
  if (*text != expected) {
    return field_error(field, "is \"" + *text + "\" but the request is for \"" + expected + "\"");
  }
  return Status::success();
}

// "retry": {"attempts": 3, "backoff": "1s", "max_backoff": "1m", "jitter": 0.2}, each
// optional with RetryPolicy's defaults; validate() checks the ranges of what is read.
Result<RetryPolicy> retry_from_json(const json& j) {
  if (!j.is_object()) {
    return field_error("retry", std::string("expected an object such as {\"attempts\": 3, \"backoff\": \"1s\"}, got ") +
                                    j.type_name());
  }
  RetryPolicy r;
  for (const auto& [key, v] : j.items()) {
    const std::string field = "retry." + key;
    if (key == "attempts") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxRetryAttempts) {
        return field_error(field, "expected a whole number of runs from 1 to " + std::to_string(kMaxRetryAttempts) +
                                      " (the first run included; 1 = no retry)");
      }
      r.attempts = v.get<uint32_t>();
    } else if (key == "backoff" || key == "max_backoff") {
      if (v.is_string() && v.get_ref<const std::string&>().starts_with("-")) {
        return field_error(field, "must not be negative");
      }
      auto d = get_duration(v, field);
      if (!d.ok()) return d.error();
      (key == "backoff" ? r.backoff_ms : r.max_backoff_ms) = *d;
    } else if (key == "jitter") {
      if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0)) {
        return field_error(field, "expected a fraction from 0 to 1 (0.2 shortens each back-off by up to 20%)");
      }
      r.jitter_permille = static_cast<uint32_t>(std::lround(v.get<double>() * 1000.0));
    } else {
      return field_error(field, "unknown field; expected attempts, backoff, max_backoff or jitter");
    }
  }
  return r;
}

}  // namespace

namespace {

// The fields of an entry's JSON that are not its timing; the timing fields are collected
// for entry_timing_from_json, which needs them together.
struct TimingFields {
  const json* cron = nullptr;
  const json* tz = nullptr;
  const json* jitter = nullptr;
  const json* timer = nullptr;
};

// The operator controls (docs/entries.md, Controls): nullopt when `field` is none of them.
std::optional<Status> control_field_from_json(const std::string& field, const json& v, Entry& e) {
  if (field == "overlap") {
    auto o = get_enum(v, field, kOverlap);
    if (!o.ok()) return o.error();
    e.overlap = *o;
  } else if (field == "retry") {
    auto r = retry_from_json(v);
    if (!r.ok()) return r.error();
    e.retry = *r;
  } else if (field == "on_failure") {
    if (v.is_null()) return Status::success();
    auto h = get_string(v, field);
    if (!h.ok()) return h.error();
    if (h->empty()) return field_error(field, "must not be empty (null: no handler)");
    e.on_failure = std::move(*h);
  } else if (field == "paused") {
    if (!v.is_boolean()) return field_error(field, "expected true or false");
    e.paused = v.get<bool>();
  } else if (field == "timeout") {
    auto d = get_duration(v, field);
    if (!d.ok()) return d.error();
    e.timeout_ms = *d;
  } else if (field == "not_before" || field == "not_after") {
    if (v.is_null()) return Status::success();
    auto t = get_string(v, field);
    if (!t.ok()) return t.error();
    auto at = parse_rfc3339_ms(*t);
    if (!at.ok()) return field_error(field, "expected an RFC 3339 instant like 2026-05-01T00:00:00Z: " + at.error().message);
    (field == "not_before" ? e.not_before_utc_ms : e.not_after_utc_ms) = *at;
  } else {
    return std::nullopt;
  }
  return Status::success();
}

Status entry_field_from_json(const std::string& field, const json& v, Entry& e, bool& has_payload) {
  if (std::optional<Status> control = control_field_from_json(field, v, e)) return *control;
  if (field == "handler") {
    auto h = get_string(v, field);
    if (!h.ok()) return h.error();
    e.handler = std::move(*h);
  } else if (field == "semantics") {
    auto s = get_enum(v, field, kSemantics);
    if (!s.ok()) return s.error();
    e.semantics = *s;
  } else if (field == "misfire") {
    auto m = get_enum(v, field, kMisfire);
    if (!m.ok()) return m.error();
    e.misfire = *m;
  } else if (field == "bind") {
    if (!v.is_array()) return field_error(field, "expected an array of node ids and \"tag:<t>\" selectors");
    for (size_t i = 0; i < v.size(); ++i) {
      auto b = get_string(v[i], "bind[" + std::to_string(i) + "]");
      if (!b.ok()) return b.error();
      e.bind.push_back(std::move(*b));
    }
  } else if (field == "prefer_origin") {
    if (!v.is_boolean()) return field_error(field, "expected true or false");
    e.prefer_origin = v.get<bool>();
  } else if (field == "accept_timeout" || field == "complete_time" || field == "misfire_window") {
    auto d = get_duration(v, field);
    if (!d.ok()) return d.error();
    (field == "accept_timeout" ? e.accept_timeout_ms : field == "complete_time" ? e.complete_time_ms
                                                                                : e.misfire_window_ms) = *d;
  } else if (field == "payload" || field == "payload_base64") {
    if (has_payload) return field_error(field, "give payload or payload_base64, not both");
    has_payload = true;
    auto p = get_string(v, field);
    if (!p.ok()) return p.error();
    if (field == "payload") {
      e.payload = std::move(*p);
    } else {
      auto bytes = base64_decode(*p);
      if (!bytes.ok()) return field_error(field, bytes.error().message);
      e.payload = std::move(*bytes);
    }
  } else {
    return field_error(field.empty() ? "\"\"" : field,
                       "unknown field; expected cron, tz, jitter, timer, handler, semantics, bind, "
                       "prefer_origin, accept_timeout, complete_time, misfire_window, misfire, "
                       "paused, timeout, not_before, not_after, on_failure, overlap, retry, payload or payload_base64");
  }
  return Status::success();
}

Status entry_timing_from_json(const TimingFields& t, Entry& e) {
  if ((t.cron == nullptr) == (t.timer == nullptr)) {
    return field_error(t.cron ? "timer" : "cron", t.cron ? "give \"cron\" or \"timer\", not both"
                                                         : "missing; give \"cron\" (with optional \"tz\") or \"timer\"");
  }
  if (t.cron == nullptr) {
    if (t.tz != nullptr) return field_error("tz", "only applies to \"cron\" entries");
    if (t.jitter != nullptr) return field_error("jitter", "for a timer, put jitter inside \"timer\"");
    auto timer = timer_from_json(*t.timer);
    if (!timer.ok()) return timer.error();
    e.timing = timer->timer;
    e.jitter_ms = timer->jitter_ms;
    return Status::success();
  }
  auto text = get_string(*t.cron, "cron");
  if (!text.ok()) return text.error();
  std::string zone = "UTC";
  if (t.tz != nullptr) {
    auto z = get_string(*t.tz, "tz");
    if (!z.ok()) return z.error();
    zone = std::move(*z);
  }
  auto compiled = CronTiming::make(*text, zone, entry_key(e));  // H hashes the key
  if (!compiled.ok()) return compiled.error();
  e.timing = std::move(*compiled);
  if (t.jitter != nullptr) {
    auto d = get_duration(*t.jitter, "jitter");
    if (!d.ok()) return d.error();
    e.jitter_ms = *d;
  }
  return Status::success();
}

}  // namespace

Result<Entry> entry_from_json(const json& j, std::string entity, std::string name, int64_t now_utc_ms,
                              std::string origin) {
  if (!j.is_object()) return field_error("entry", std::string("expected a JSON object, got ") + j.type_name());
  Entry e;
  e.created_utc_ms = now_utc_ms;
  e.origin = std::move(origin);
  const std::string key = entry_key(entity, name);
  TimingFields timing;
  bool has_payload = false;
  for (const auto& [field, v] : j.items()) {
    Status st;
    if (field == "cron") timing.cron = &v;
    else if (field == "tz") timing.tz = &v;
    else if (field == "jitter") timing.jitter = &v;
    else if (field == "timer") timing.timer = &v;
    else if (field == "entity") st = check_same(v, field, entity);
    else if (field == "name") st = check_same(v, field, name);
    else if (field == "key") st = check_same(v, field, key);
    else if (field == "created" || field == "origin" || field == "resumed" || field == "triggers") continue;  // the server's: accepted so a GET body can be PUT back
    else st = entry_field_from_json(field, v, e, has_payload);
    if (!st.ok()) return st.error();
  }
  e.entity = std::move(entity);
  e.name = std::move(name);
  if (Status st = entry_timing_from_json(timing, e); !st.ok()) return st.error();
  if (e.handler.empty()) return field_error("handler", "missing; name the handler that runs this entry");
  if (Status s = validate(e); !s.ok()) return s.error();
  return e;
}

json entry_to_json(const Entry& e) {
  json j = json::object();
  j["entity"] = e.entity;
  j["name"] = e.name;
  j["key"] = entry_key(e);
  j["created"] = format_rfc3339_utc(e.created_utc_ms);
  j["origin"] = e.origin;
  if (const auto* cron = std::get_if<CronTiming>(&e.timing)) {
    j["cron"] = cron->text;
    j["tz"] = cron->tz;
    j["jitter"] = format_duration_ms(e.jitter_ms);
  } else {
    const auto& t = std::get<Timer>(e.timing);
    json tj = json::object();
    switch (t.kind) {
      case TimerKind::at: tj["at"] = format_rfc3339_utc(t.at_utc_ms); break;
      case TimerKind::after: tj["after"] = format_duration_ms(t.after_ms); break;
      case TimerKind::interval:
        tj["interval"] = format_duration_ms(t.interval_ms);
        if (t.count > 0) {
          tj["count"] = t.count;
        } else {
          tj["repeat_for"] = format_duration_ms(t.repeat_for_ms);
        }
        break;
    }
    tj["jitter"] = format_duration_ms(e.jitter_ms);
    j["timer"] = std::move(tj);
  }
  j["handler"] = e.handler;
  j["semantics"] = std::string(to_string(e.semantics));
  j["bind"] = e.bind;
  j["prefer_origin"] = e.prefer_origin;
  j["accept_timeout"] = format_duration_ms(e.accept_timeout_ms);
  j["complete_time"] = format_duration_ms(e.complete_time_ms);
  j["misfire_window"] = format_duration_ms(e.misfire_window_ms);
  j["misfire"] = std::string(to_string(e.misfire));
  j["paused"] = e.paused;
  j["timeout"] = format_duration_ms(e.timeout_ms);
  j["overlap"] = std::string(to_string(e.overlap));
  j["retry"] = {{"attempts", e.retry.attempts},
                {"backoff", format_duration_ms(e.retry.backoff_ms)},
                {"max_backoff", format_duration_ms(e.retry.max_backoff_ms)},
                {"jitter", e.retry.jitter_permille / 1000.0}};
  j["not_before"] = e.not_before_utc_ms ? json(format_rfc3339_utc(*e.not_before_utc_ms)) : json(nullptr);
  j["not_after"] = e.not_after_utc_ms ? json(format_rfc3339_utc(*e.not_after_utc_ms)) : json(nullptr);
  j["on_failure"] = e.on_failure.empty() ? json(nullptr) : json(e.on_failure);
  if (e.resumed_utc_ms) j["resumed"] = format_rfc3339_utc(*e.resumed_utc_ms);
  if (!e.triggers.empty()) {
    json list = json::array();
    for (const Trigger& t : e.triggers) list.push_back({{"id", t.id}, {"at", format_rfc3339_utc(t.at_utc_ms)}});
    j["triggers"] = std::move(list);
  }
  if (is_valid_utf8(e.payload)) {
    j["payload"] = e.payload;
  } else {
    j["payload_base64"] = base64_encode(e.payload);
  }
  return j;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1Fu; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0Fu; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07u; }
    else return false;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = cp << 6 | (cc & 0x3Fu);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace caesium::schedule
