// Chronos compatibility (docs/chronos.md): the timer bodies Chronos clients send, and how
// a Chronos timer becomes a Caesium entry.  Pure functions; the routes are in api.cpp,
// the pops in chronos_executor.cpp.
//
// A Chronos timer <id> is the entry "chronos/caesium/schedule/<id>" of the configured
// volume (api.chronos_volume): an interval timer (created now, pops at now + k·interval
// while k·interval <= repeat-for) whose handler is the built-in "chronos", with the
// callback in the entry's payload as JSON {"uri", "opaque", "replication_factor"}.
// Pops are at-least-once, as in Chronos (a net split may pop on both sides; the
// X-Sequence-Number tells duplicates apart).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "schedule/entry.h"

namespace caesium::daemon {

inline constexpr std::string_view kChronosEntity = "chronos";
inline constexpr std::string_view kChronosHandler = "chronos";
// Chronos requires a callback to finish within 2 seconds (its docs/api.md).
inline constexpr int64_t kChronosCallbackTimeoutMs = 2'000;

struct ChronosTimer {
  int64_t interval_s = 0;
  int64_t repeat_for_s = 0;  // defaults to interval_s
  std::string uri;           // with a scheme (a scheme-less URI gets "http://")
  std::string opaque;
  std::optional<int64_t> replication_factor;  // accepted and recorded; replicas come from the volume
};

// Parses a POST/PUT /timers body.  Rules (Chronos's, docs/chronos.md):
//   timing.interval     required, whole seconds >= 0
//   timing.repeat-for   optional, whole seconds >= 0, default = interval
//   interval 0 with a non-zero repeat-for is an error (a timer cannot repeat every 0 s)
//   callback.http.uri   required string: http://, https:// or no scheme (http assumed)
//   callback.http.opaque  optional string (default "")
//   reliability.replication-factor  optional integer >= 0
//   statistics and unknown members are ignored, as Chronos ignores them.
// Errors name the field ("timing.interval", "callback.http.uri", ...).
Result<ChronosTimer> parse_chronos_timer(std::string_view body);

// True when Chronos would accept the timer but it can never pop (repeat-for shorter
// than a non-zero interval): the API stores nothing and deletes the id (docs/chronos.md).
bool chronos_never_pops(const ChronosTimer& timer);

// The entry for timer `id` created now by node `origin` (validated: an Error names the
// field when the callback does not fit the 64 KiB payload, or `id` is not usable).
Result<schedule::Entry> chronos_entry(const ChronosTimer& timer, const std::string& id, int64_t now_utc_ms,
                                      const std::string& origin);

// What a pop needs: the callback from an entry's payload.
struct ChronosCallback {
  std::string uri;
  std::string opaque;
};
Result<ChronosCallback> chronos_callback(std::string_view payload);

// A fresh timer id in Chronos's format: 16 hex digits, '-', the replication factor
// ("0123456789abcdef-2").  Clients treat it as opaque; the format matches Chronos's so
// tools that look at it are not surprised.
std::string chronos_timer_id(uint64_t random, int64_t replication_factor);

// Whether `id` can name a timer (an entry name: [A-Za-z0-9._:@-], 1..200 bytes).
bool valid_chronos_id(std::string_view id);

}  // namespace caesium::daemon
