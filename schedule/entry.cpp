#include "schedule/entry.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <set>

#include "base/hash.h"

#include "base/time.h"

namespace caesium::schedule {
namespace {

bool identifier_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '@' || c == '-';
}

Error field_error(const std::string& field, const std::string& why) {
  return Error(field + ": " + why, field);
}

Status duration_field(const char* field, int64_t ms, bool allow_zero) {
  if (ms < 0 || (!allow_zero && ms == 0)) {
    return field_error(field, allow_zero ? "must not be negative" : "must be greater than 0");
  }
  if (ms > kMaxEntryDurationMs) return field_error(field, "must be at most 100 years");
  return Status::success();
}

Status validate_bind(const std::vector<std::string>& bind) {
  if (bind.size() > kMaxBindSelectors) {
    return field_error("bind", "has " + std::to_string(bind.size()) + " selectors; at most " +
                                   std::to_string(kMaxBindSelectors) + " are allowed");
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < bind.size(); ++i) {
    const std::string field = "bind[" + std::to_string(i) + "]";
    std::string_view sel = bind[i];
    if (sel.substr(0, kTagPrefix.size()) == kTagPrefix) {
      if (Status s = validate_identifier(sel.substr(kTagPrefix.size()), field); !s.ok()) {
        return field_error(field, "tag selector needs a tag after \"tag:\"; " + s.error().message);
      }
    } else if (Status s = validate_identifier(sel, field); !s.ok()) {
      return s;
    }
    if (!seen.insert(sel).second) return field_error(field, "duplicate selector \"" + bind[i] + "\"");
  }
  return Status::success();
}

Status validate_cron(const CronTiming& c, const Entry& e) {
  if (c.expr.empty() || c.expr.text() != c.text) {
    return field_error("cron", "the expression is not compiled (use CronTiming::make)");
  }
  // H's values come from the key: an expression compiled for another key (an entry
  // copied under a new name) would fire at the other entry's times.
  if (c.expr.uses_hash() && c.expr.hash_key_digest() != cron_hash_key_digest(entry_key(e))) {
    return field_error("cron", "the expression's H was compiled for another entry's key (use CronTiming::make "
                               "with this entry's key)");
  }
  if (c.zone.name() != c.tz) return field_error("tz", "the zone is not compiled (use CronTiming::make)");
  return Status::success();
}

// The retry policy's ranges (docs/entries.md, Controls, Retries); the codec and the JSON
// reader refuse the same values through here.
Status validate_retry(const RetryPolicy& r) {
  if (r.attempts < 1 || r.attempts > kMaxRetryAttempts) {
    return field_error("retry.attempts", "must be between 1 and " + std::to_string(kMaxRetryAttempts) +
                                             " (runs in all, the first included; 1 = no retry)");
  }
  if (r.backoff_ms < 0) return field_error("retry.backoff", "must not be negative");
  if (r.backoff_ms > kMaxRetryBackoffMs) return field_error("retry.backoff", "must be at most 1 day");
  if (r.max_backoff_ms < r.backoff_ms) {
    return field_error("retry.max_backoff", "is shorter than retry.backoff (" + format_duration_ms(r.backoff_ms) + ")");
  }
  if (r.max_backoff_ms > kMaxRetryBackoffMs) return field_error("retry.max_backoff", "must be at most 1 day");
  if (r.jitter_permille > 1000) return field_error("retry.jitter", "must be a fraction between 0 and 1");
  return Status::success();
}

}  // namespace

int64_t retry_backoff_ms(const RetryPolicy& retry, uint32_t failed_runs, uint64_t seed) {
  int64_t wait = std::max<int64_t>(0, retry.backoff_ms);
  for (uint32_t i = 1; i < failed_runs && wait < retry.max_backoff_ms; ++i) wait *= 2;
  wait = std::min(wait, std::max(retry.max_backoff_ms, retry.backoff_ms));
  if (retry.jitter_permille == 0 || wait == 0) return wait;
  const uint64_t cut = static_cast<uint64_t>(wait) / 1000 * std::min<uint32_t>(retry.jitter_permille, 1000) +
                       static_cast<uint64_t>(wait) % 1000 * std::min<uint32_t>(retry.jitter_permille, 1000) / 1000;
  return wait - static_cast<int64_t>(cut == 0 ? 0 : seed % (cut + 1));
}

std::string entry_key(std::string_view entity, std::string_view name) {
  std::string key;
  key.reserve(entity.size() + kScheduleKeyInfix.size() + name.size());
  key.append(entity).append(kScheduleKeyInfix).append(name);
  return key;
}

Status validate_identifier(std::string_view value, const std::string& field) {
  if (value.empty()) return field_error(field, "must not be empty");
  if (value.size() > kMaxIdentifierBytes) {
    return field_error(field, "is " + std::to_string(value.size()) + " bytes; at most " +
                                  std::to_string(kMaxIdentifierBytes) + " are allowed");
  }
  if (value == "." || value == "..") return field_error(field, "must not be \".\" or \"..\"");
  for (size_t i = 0; i < value.size(); ++i) {
    if (!identifier_char(value[i])) {
      return field_error(field, "character " + std::to_string(i + 1) +
                                    " is not allowed; use letters, digits and . _ : @ -");
    }
  }
  return Status::success();
}

bool is_identifier(std::string_view value) {
  if (value.empty() || value.size() > kMaxIdentifierBytes || value == "." || value == "..") return false;
  for (char c : value) {
    if (!identifier_char(c)) return false;
  }
  return true;
}

bool is_entry_key(std::string_view key) {
  const size_t at = key.find(kScheduleKeyInfix);
  return at != std::string_view::npos && at > 0 && at + kScheduleKeyInfix.size() < key.size();
}

Result<EntryKey> parse_entry_key(std::string_view key) {
  // Identifiers cannot contain '/', so the first infix is the only possible split.
  const size_t at = key.find(kScheduleKeyInfix);
  if (at == std::string_view::npos) {
    return Error("key: not a schedule key; expected \"<entity>/caesium/schedule/<name>\"", "key");
  }
  EntryKey out{std::string(key.substr(0, at)), std::string(key.substr(at + kScheduleKeyInfix.size()))};
  if (Status s = validate_identifier(out.entity, "entity"); !s.ok()) return s.error();
  if (Status s = validate_identifier(out.name, "name"); !s.ok()) return s.error();
  return out;
}

std::optional<EntryKeyView> split_entry_key(std::string_view key) {
  const size_t at = key.find(kScheduleKeyInfix);  // the only possible split, as above
  if (at == std::string_view::npos) return std::nullopt;
  EntryKeyView out{key.substr(0, at), key.substr(at + kScheduleKeyInfix.size())};
  if (!is_identifier(out.entity) || !is_identifier(out.name)) return std::nullopt;
  return out;
}

static Status validate_triggers(const std::vector<Trigger>& triggers) {
  if (triggers.size() > kMaxTriggers) {
    return field_error("triggers", "has " + std::to_string(triggers.size()) + " items; at most " +
                                       std::to_string(kMaxTriggers) + " are kept");
  }
  for (size_t i = 0; i < triggers.size(); ++i) {
    const Trigger& t = triggers[i];
    const std::string field = "triggers[" + std::to_string(i) + "]";
    if (t.id.empty() || t.id.size() > kMaxTriggerIdBytes ||
        !std::all_of(t.id.begin(), t.id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); })) {
      return field_error(field + ".id", "must be 1 to 32 lower-case letters and digits");
    }
    if (t.at_utc_ms < kCronMinUtcMs || t.at_utc_ms > kCronMaxUtcMs) {
      return field_error(field + ".at", "must be between years 0001 and 9999");
    }
    if (i > 0 && t.at_utc_ms <= triggers[i - 1].at_utc_ms) {
      return field_error(field + ".at", "must be after the previous trigger's (triggers are kept in due order)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (triggers[j].id == t.id) return field_error(field + ".id", "duplicate trigger id \"" + t.id + "\"");
    }
  }
  return Status::success();
}

const Trigger* Entry::trigger_at(int64_t at_utc_ms) const {
  const auto it = std::lower_bound(triggers.begin(), triggers.end(), at_utc_ms,
                                   [](const Trigger& t, int64_t at) { return t.at_utc_ms < at; });
  return it != triggers.end() && it->at_utc_ms == at_utc_ms ? &*it : nullptr;
}

const Trigger* Entry::trigger_named(std::string_view id) const {
  const auto it = std::find_if(triggers.begin(), triggers.end(), [&](const Trigger& t) { return t.id == id; });
  return it != triggers.end() ? &*it : nullptr;
}

std::string trigger_id(char kind, uint64_t hash) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%c%016llx", kind, static_cast<unsigned long long>(hash));
  return std::string(buf, 17);
}

std::string trigger_id_for_key(std::string_view idempotency_key) {
  return trigger_id('k', hash64(idempotency_key, 0x1d3e));
}

Status validate_idempotency_key(std::string_view k) {
  if (k.empty()) return field_error("Idempotency-Key", "must not be empty");
  if (k.size() > kMaxIdempotencyKeyBytes) {
    return field_error("Idempotency-Key", "is " + std::to_string(k.size()) + " bytes; at most " +
                                              std::to_string(kMaxIdempotencyKeyBytes) + " are allowed");
  }
  for (size_t i = 0; i < k.size(); ++i) {
    const auto c = static_cast<unsigned char>(k[i]);
    if (c < 0x21 || c > 0x7e) {
      return field_error("Idempotency-Key", "byte " + std::to_string(i + 1) +
                                                " is not visible ASCII (use letters, digits and punctuation)");
    }
  }
  return Status::success();
}

Result<Trigger> add_trigger(Entry& e, std::string id, int64_t floor_utc_ms, int64_t now_utc_ms) {
  assert(!e.paused);
  assert(e.trigger_named(id) == nullptr);
  assert(floor_utc_ms >= now_utc_ms);
  // Forget what can no longer run and is past the idempotency memory; at the cap, the
  // oldest that can no longer run (a trigger past its misfire window would be missed by
  // a replica that finds it now, and one that found it keeps it: an edit does not unschedule
  // what was due before it).
  const int64_t memory_ms = std::max(kTriggerMemoryMs, e.misfire_window_ms);
  std::erase_if(e.triggers, [&](const Trigger& t) { return t.at_utc_ms < now_utc_ms - memory_ms; });
  if (e.triggers.size() >= kMaxTriggers) {
    if (e.triggers.front().at_utc_ms >= now_utc_ms - e.misfire_window_ms) {
      return field_error("triggers", "the entry has " + std::to_string(kMaxTriggers) +
                                         " triggers that may still run; wait for them (or for their misfire window)");
    }
    e.triggers.erase(e.triggers.begin());
  }
  // The first free millisecond: not an instant of the timing (an occurrence is named by its
  // instant) nor of another trigger.  Cron instants are whole seconds and timer pops are
  // apart by their interval, so this takes a few steps at most.
  int64_t at = std::max(floor_utc_ms, e.triggers.empty() ? floor_utc_ms : e.triggers.back().at_utc_ms + 1);
  for (;;) {
    const std::optional<int64_t> scheduled = next_scheduled_occurrence(e, at - 1);
    if (!scheduled || *scheduled != at) break;
    ++at;
  }
  e.triggers.push_back(Trigger{std::move(id), at});
  return e.triggers.back();
}

Status validate(const Entry& e) {
  if (Status s = validate_identifier(e.entity, "entity"); !s.ok()) return s;
  if (Status s = validate_identifier(e.name, "name"); !s.ok()) return s;
  if (const auto* cron = std::get_if<CronTiming>(&e.timing)) {
    if (Status s = validate_cron(*cron, e); !s.ok()) return s;
    if (e.jitter_ms < 0 || e.jitter_ms > kMaxJitterMs) return field_error("jitter", "must be between 0 and 1 day");
  } else if (Status s = validate_timer(std::get<Timer>(e.timing), e.jitter_ms); !s.ok()) {
    return s;
  }
  if (Status s = validate_identifier(e.handler, "handler"); !s.ok()) return s;
  if (e.semantics != Semantics::at_least_once && e.semantics != Semantics::at_most_once) {
    return field_error("semantics", "must be at_least_once or at_most_once");
  }
  if (Status s = validate_bind(e.bind); !s.ok()) return s;
  if (!e.origin.empty()) {
    if (Status s = validate_identifier(e.origin, "origin"); !s.ok()) return s;
  } else if (e.prefer_origin) {
    return field_error("prefer_origin", "is set but the entry has no origin node");
  }
  if (e.created_utc_ms < kCronMinUtcMs || e.created_utc_ms > kCronMaxUtcMs) {
    return field_error("created", "must be between years 0001 and 9999");
  }
  if (Status s = duration_field("accept_timeout", e.accept_timeout_ms, false); !s.ok()) return s;
  if (Status s = duration_field("complete_time", e.complete_time_ms, true); !s.ok()) return s;
  if (Status s = duration_field("misfire_window", e.misfire_window_ms, true); !s.ok()) return s;
  if (e.misfire != MisfirePolicy::skip && e.misfire != MisfirePolicy::fire_once &&
      e.misfire != MisfirePolicy::fire_all) {
    return field_error("misfire", "must be skip, fire_once or fire_all");
  }
  if (Status s = duration_field("timeout", e.timeout_ms, true); !s.ok()) return s;
  if (e.overlap != OverlapPolicy::allow && e.overlap != OverlapPolicy::forbid && e.overlap != OverlapPolicy::replace) {
    return field_error("overlap", "must be allow, forbid or replace");
  }
  for (const auto& [field, at] : {std::pair{"not_before", e.not_before_utc_ms}, std::pair{"not_after", e.not_after_utc_ms},
                                  std::pair{"resumed", e.resumed_utc_ms}}) {
    if (at && (*at < kCronMinUtcMs || *at > kCronMaxUtcMs)) return field_error(field, "must be between years 0001 and 9999");
  }
  if (e.not_before_utc_ms && e.not_after_utc_ms && *e.not_after_utc_ms < *e.not_before_utc_ms) {
    return field_error("not_after", "is before not_before (" + format_rfc3339_utc(*e.not_before_utc_ms) + ")");
  }
  if (Status s = validate_triggers(e.triggers); !s.ok()) return s;
  if (Status s = validate_retry(e.retry); !s.ok()) return s;
  if (!e.on_failure.empty()) {
    if (Status s = validate_identifier(e.on_failure, "on_failure"); !s.ok()) return s;
  }
  if (e.payload.size() > kMaxPayloadBytes) {
    return field_error("payload", "is " + std::to_string(e.payload.size()) + " bytes; at most 65536 are allowed");
  }
  return Status::success();
}

std::string_view to_string(Semantics s) {
  return s == Semantics::at_most_once ? "at_most_once" : "at_least_once";
}

std::string_view to_string(MisfirePolicy p) {
  switch (p) {
    case MisfirePolicy::skip: return "skip";
    case MisfirePolicy::fire_all: return "fire_all";
    case MisfirePolicy::fire_once: break;
  }
  return "fire_once";
}

std::string_view to_string(OverlapPolicy p) {
  switch (p) {
    case OverlapPolicy::forbid: return "forbid";
    case OverlapPolicy::replace: return "replace";
    case OverlapPolicy::allow: break;
  }
  return "allow";
}

}  // namespace caesium::schedule
