// The JSON form of an Entry, used by the HTTP API and (through the TOML loader) for
// static entries.  docs/entries.md documents every field with examples.
//
//   {"cron": "0 9 * * MON-FRI", "tz": "Europe/London", "jitter": "30s",
//    "handler": "report", "semantics": "at_most_once", "bind": ["n1", "tag:eu"],
//    "prefer_origin": false, "accept_timeout": "10s", "complete_time": "0s",
//    "misfire_window": "10m", "misfire": "fire_once", "payload": "hello"}
//   {"timer": {"interval": "20s", "repeat_for": "2m", "jitter": "1s"}, "handler": "tick"}
//   "retry": {"attempts": 3, "backoff": "1s", "max_backoff": "1m", "jitter": 0.2}
//     (each optional; jitter is a fraction 0..1, kept as permille rounded to nearest;
//     entry_to_json always writes the whole object)
//
// Durations are strings ("30s", "1h30m", base/time.h); instants are RFC 3339.  Unknown
// fields are errors naming the field.  entry_to_json also writes the read-only fields
// "entity", "name", "key", "created" and "origin"; entry_from_json accepts them back (so
// GET-then-PUT works): "entity", "name" and "key" must agree with the request, "created"
// and "origin" are ignored because the server owns them.  So are "resumed" and
// "triggers" (the manual occurrences, [{"id", "at"}], written only by a trigger request).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "schedule/entry.h"

namespace caesium::schedule {

// Builds and validates an entry from a JSON object, for `entity`/`name`, created now by
// node `origin`.  Errors name the field ("timer.repeat_for", "bind[1]", "payload_base64").
// Never throws.
Result<Entry> entry_from_json(const nlohmann::json& j, std::string entity, std::string name,
                              int64_t now_utc_ms, std::string origin);

// The JSON object for `entry` (REQUIRES: validate(entry) succeeded).  A payload that is
// valid UTF-8 is written as "payload", any other as "payload_base64".
nlohmann::json entry_to_json(const Entry& entry);

// Whether `bytes` is UTF-8: a payload that is not goes into JSON as payload_base64.
bool is_valid_utf8(std::string_view bytes);

}  // namespace caesium::schedule
