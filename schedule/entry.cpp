#include "schedule/entry.h"

#include <algorithm>
#include <set>

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

}  // namespace

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
  if (e.overlap == OverlapPolicy::replace) {
    // The value is reserved (its encoding too); cancelling a running run is not built yet.
    return field_error("overlap", "\"replace\" is not supported yet; use \"allow\" or \"forbid\"");
  }
  if (e.overlap != OverlapPolicy::allow && e.overlap != OverlapPolicy::forbid) {
    return field_error("overlap", "must be allow or forbid");
  }
  for (const auto& [field, at] : {std::pair{"not_before", e.not_before_utc_ms}, std::pair{"not_after", e.not_after_utc_ms},
                                  std::pair{"resumed", e.resumed_utc_ms}}) {
    if (at && (*at < kCronMinUtcMs || *at > kCronMaxUtcMs)) return field_error(field, "must be between years 0001 and 9999");
  }
  if (e.not_before_utc_ms && e.not_after_utc_ms && *e.not_after_utc_ms < *e.not_before_utc_ms) {
    return field_error("not_after", "is before not_before (" + format_rfc3339_utc(*e.not_before_utc_ms) + ")");
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
