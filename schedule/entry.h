// Entry: one schedule entry of an entity, stored in its volume under
// `<entity>/caesium/schedule/<name>` (docs/design.md §1, §5).  docs/entries.md is the user
// reference for every field.
//
// Identifiers (entity, name, handler, node ids in bind/origin, tags) use a safe charset
// [A-Za-z0-9._:@-], 1..200 bytes, and are never "." or "..": they appear in store keys,
// URLs, environment variables and log lines, and must not need escaping there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "schedule/timing.h"

namespace caesium::schedule {

inline constexpr std::string_view kScheduleKeyInfix = "/caesium/schedule/";
inline constexpr size_t kMaxIdentifierBytes = 200;
inline constexpr size_t kMaxPayloadBytes = 64 * 1024;
inline constexpr size_t kMaxBindSelectors = 64;
inline constexpr std::string_view kTagPrefix = "tag:";

enum class Semantics : uint8_t { at_least_once = 0, at_most_once = 1 };
enum class MisfirePolicy : uint8_t { skip = 0, fire_once = 1, fire_all = 2 };
// What an occurrence due while the entry's previous run is still running does
// (docs/entries.md, "Controls"; docs/firing.md, "Overlap").
enum class OverlapPolicy : uint8_t { allow = 0, forbid = 1, replace = 2 };

// A manual occurrence ("run now", docs/entries.md Controls): due at `at_utc_ms`, an
// instant none of the entry's scheduled occurrences has, at or after the time of the write
// that added it (so an edit rule governs it like any occurrence).  `id` names it: derived
// from the request's Idempotency-Key, or made up by the node that wrote it.
struct Trigger {
  std::string id;  // [a-z0-9], 1..kMaxTriggerIdBytes
  int64_t at_utc_ms = 0;
  friend bool operator==(const Trigger&, const Trigger&) = default;
};
// An entry keeps at most this many triggers (the oldest go first, once they can no longer
// run: Entry::add_trigger).
inline constexpr size_t kMaxTriggers = 16;
inline constexpr size_t kMaxTriggerIdBytes = 32;
// A trigger is remembered (for its Idempotency-Key) at least this long after its due time,
// or its misfire window when that is longer, unless kMaxTriggers newer ones push it out.
inline constexpr int64_t kTriggerMemoryMs = 10 * 60 * 1000;

// Retries with back-off (docs/entries.md, "Controls"; docs/firing.md, "Retries").  A run
// that ends in a definite failure (the handler reported failure, or was stopped at its
// timeout) is followed by the next run after a back-off, until `attempts` runs in all.
// An unknown outcome (lost) is never retried for at-most-once entries.
struct RetryPolicy {
  uint32_t attempts = 1;             // runs in all, the first included: 1..kMaxRetryAttempts; 1 = no retry
  int64_t backoff_ms = 1'000;        // before the second run; doubles before each further one
  int64_t max_backoff_ms = 60'000;   // the doubling stops here (>= backoff_ms)
  uint32_t jitter_permille = 0;      // 0..1000: each back-off is shortened by up to this fraction
  bool enabled() const { return attempts > 1; }
  friend bool operator==(const RetryPolicy&, const RetryPolicy&) = default;
};
inline constexpr uint32_t kMaxRetryAttempts = 100;
inline constexpr int64_t kMaxRetryBackoffMs = 24 * 60 * 60 * 1000;

struct Entry {
  std::string entity;
  std::string name;
  Timing timing = Timer{};
  int64_t jitter_ms = 0;  // fire = scheduled + [0, jitter_ms], deterministic per occurrence
  std::string handler;    // name of a handler configured on the nodes
  Semantics semantics = Semantics::at_least_once;
  // Node ids and/or "tag:<t>" selectors; empty = every replica of the volume.
  std::vector<std::string> bind;
  bool prefer_origin = false;  // prefer running on `origin` when it is eligible
  std::string origin;          // node id that created the entry
  int64_t created_utc_ms = 0;
  int64_t accept_timeout_ms = 10'000;   // > 0
  int64_t complete_time_ms = 0;         // 0 = wait indefinitely once accepted
  int64_t misfire_window_ms = 600'000;  // how late a missed occurrence may still run
  MisfirePolicy misfire = MisfirePolicy::fire_once;
  std::string payload;  // opaque bytes handed to the handler, <= 64 KiB
  // Operator controls (docs/entries.md, "Controls").
  bool paused = false;     // nothing of it is claimed or run while set (a claim under it is refused)
  int64_t timeout_ms = 0;  // > 0: the handler is stopped after this long (timed_out); 0: the handler's own
  std::optional<int64_t> not_before_utc_ms;  // no occurrence is scheduled before it
  std::optional<int64_t> not_after_utc_ms;   // nor after it
  // Set by a resume (the server's, like created).  Under misfire = skip the entry schedules
  // nothing before it: what fell due while it was paused is skipped.
  std::optional<int64_t> resumed_utc_ms;
  // Manual occurrences, by due time, strictly increasing (the server's, like created: a
  // trigger request adds one; a PUT keeps them).
  std::vector<Trigger> triggers;
  OverlapPolicy overlap = OverlapPolicy::allow;  // allow: occurrences run regardless of one another
  RetryPolicy retry;
  // A handler run once when an occurrence's last run fails (docs/entries.md, "Notifications");
  // empty: none.
  std::string on_failure;

  // Whether any control is set (the entry then needs encoding version 2).
  bool has_controls() const {
    return paused || timeout_ms != 0 || not_before_utc_ms.has_value() || not_after_utc_ms.has_value() ||
           resumed_utc_ms.has_value() || overlap != OverlapPolicy::allow || !triggers.empty() ||
           retry != RetryPolicy{} || !on_failure.empty();
  }
  // The trigger due at `at_utc_ms`, or null.
  const Trigger* trigger_at(int64_t at_utc_ms) const;
  const Trigger* trigger_named(std::string_view id) const;

  friend bool operator==(const Entry&, const Entry&) = default;
};

// The wait before the run that follows `failed_runs` failed runs (>= 1) of one
// occurrence: backoff x 2^(failed_runs - 1), at most max_backoff, shortened by a jitter
// drawn from `seed` (the same on every node: the occurrence's key).
int64_t retry_backoff_ms(const RetryPolicy& retry, uint32_t failed_runs, uint64_t seed);

// At-most-once with overlap = forbid or replace: the votes refuse a second concurrent run
// (docs/firing.md, "Overlap"); under replace the later occurrence first asks the running
// one to stop.  At-least-once is best effort, decided locally.
inline bool forbids_overlap(const Entry& e) {
  return e.semantics == Semantics::at_most_once &&
         (e.overlap == OverlapPolicy::forbid || e.overlap == OverlapPolicy::replace);
}

// A pause or resume at `now_utc_ms`, as the API writes it: a resume of a paused entry
// records its instant (resumed_utc_ms).
inline void apply_pause(Entry& e, bool paused, int64_t now_utc_ms) {
  if (e.paused && !paused) e.resumed_utc_ms = now_utc_ms;
  e.paused = paused;
}

// Adds a manual occurrence named `id`, written at `now_utc_ms` by a write whose version
// will not be later than `floor_utc_ms` (>= now_utc_ms): it is due at the first
// millisecond from floor_utc_ms on that no scheduled occurrence or other trigger has.
// Triggers that can no longer run (further past due than their misfire window) and are
// older than kTriggerMemoryMs are dropped; at kMaxTriggers, the oldest that can no
// longer run goes.  Returns the trigger, or an error (field "triggers") when kMaxTriggers
// triggers may all still run.
// REQUIRES: !e.paused, no trigger named `id`.
Result<Trigger> add_trigger(Entry& e, std::string id, int64_t floor_utc_ms, int64_t now_utc_ms);

// Trigger ids: `kind` ('k' from an Idempotency-Key, 't' made up) and 16 hex digits.
std::string trigger_id(char kind, uint64_t hash);
// The id of the trigger an Idempotency-Key names.  REQUIRES: validate_idempotency_key.
std::string trigger_id_for_key(std::string_view idempotency_key);
inline constexpr size_t kMaxIdempotencyKeyBytes = 200;
// An Idempotency-Key is 1..200 bytes of visible ASCII (0x21..0x7e); the message says why not.
Status validate_idempotency_key(std::string_view idempotency_key);

// "<entity>/caesium/schedule/<name>".  REQUIRES nothing: it concatenates; validate()
// is what guarantees the parts are identifiers.
std::string entry_key(std::string_view entity, std::string_view name);
inline std::string entry_key(const Entry& e) { return entry_key(e.entity, e.name); }

struct EntryKey {
  std::string entity;
  std::string name;
};
// Splits a store key into entity and name; an error when the key is not a schedule key
// or a part is not an identifier.
Result<EntryKey> parse_entry_key(std::string_view key);
// The same split without copies; nullopt unless both parts are identifiers.  Views
// into `key`.
struct EntryKeyView {
  std::string_view entity;
  std::string_view name;
};
std::optional<EntryKeyView> split_entry_key(std::string_view key);
// Cheap test used by the store watcher: does `key` have the schedule-key shape?
bool is_entry_key(std::string_view key);

// Checks `value` against the identifier rules; the message names `field`.
Status validate_identifier(std::string_view value, const std::string& field);
// validate_identifier(value, ...).ok(), without building an error.
bool is_identifier(std::string_view value);

// Checks every field; the Error names the bad field (Error::field, e.g. "accept_timeout",
// "timer.repeat_for", "bind[2]") and says why.  A cron timing must be compiled (its
// expr/zone match its text/tz).
Status validate(const Entry& entry);

std::string_view to_string(Semantics s);
std::string_view to_string(MisfirePolicy p);
std::string_view to_string(OverlapPolicy p);

}  // namespace caesium::schedule
