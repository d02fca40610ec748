// Notifications: which events call for one, and the entry that carries it (notify.h).
#include "node/core/notify.h"

#include <cassert>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/time.h"

namespace caesium::node {

std::string_view to_string(NotifyEvent e) {
  switch (e) {
    case NotifyEvent::kOnFailure: return "on_failure";
    case NotifyEvent::kFailed: return "failed";
    case NotifyEvent::kMissed: return "missed";
    case NotifyEvent::kLost: return "lost";
    case NotifyEvent::kWithheld: return "withheld";
  }
  return "failed";
}

bool is_notification_key(std::string_view entry_key) {
  const auto parts = schedule::split_entry_key(entry_key);
  return parts && parts->entity == kNotifyEntity;
}

namespace {

Notice notice_of(NotifyEvent kind, std::string handler, const schedule::FireEvent& event, const std::string& self,
                 int64_t instant_utc_ms) {
  Notice n;
  n.event = kind;
  n.handler = std::move(handler);
  n.volume = event.volume;
  n.occ = event.occ;
  n.instant_utc_ms = instant_utc_ms;
  n.run = event.run;
  n.node = self;
  n.detail = event.detail;
  n.at_most_once = event.at_most_once;
  return n;
}

// A failed run is the occurrence's last when no retry follows it: this was its last
// run by the definition it was dispatched with (FireEvent::runs) — which the worker knows
// even when the definition has not reached it — or, from a sender that does not say, by
// the definition held here: the entry does not retry, or this was its last attempt (or
// the entry is gone).
bool last_run(const schedule::FireEvent& event, const schedule::Entry* subject) {
  if (event.runs > 0) return event.run >= event.runs;
  return subject == nullptr || !subject->retry.enabled() || event.run >= subject->retry.attempts;
}

}  // namespace

std::vector<Notice> notices_for(const schedule::FireEvent& event, const schedule::Entry* subject,
                                const NotifyOptions& options, const std::string& self) {
  using K = schedule::FireEvent::Kind;
  std::vector<Notice> out;
  if (is_notification_key(event.occ.entry_key)) return out;
  const bool cluster = !options.handler.empty();
  const int64_t scheduled = event.occ.scheduled_utc_ms;
  switch (event.kind) {
    case K::kCompleted: {
      if (event.ok || event.replaced || !last_run(event, subject)) break;
      // Two workers may each run, and see fail, the last run of one at-least-once
      // occurrence (a duplicate): both name the occurrence's instant, so that their
      // notices are one entry with one occurrence.  (Not their clocks at the failure.)
      // The handler of the definition the run was dispatched with, as for last_run (from
      // a sender that does not say: the definition held here).
      const std::string& on_failure = event.runs > 0 || subject == nullptr ? event.on_failure : subject->on_failure;
      if (!on_failure.empty()) out.push_back(notice_of(NotifyEvent::kOnFailure, on_failure, event, self, scheduled));
      if (cluster && options.failed) out.push_back(notice_of(NotifyEvent::kFailed, options.handler, event, self, scheduled));
      break;
    }
    case K::kMissed:
      // Any master may find an occurrence missed: every one names the same instant.
      if (cluster && options.missed) out.push_back(notice_of(NotifyEvent::kMissed, options.handler, event, self, scheduled));
      break;
    case K::kLost:
      if (cluster && options.lost) out.push_back(notice_of(NotifyEvent::kLost, options.handler, event, self, scheduled));
      break;
    default: break;
  }
  return out;
}

Notice withheld_notice(const schedule::FireEvent& withheld, const NotifyOptions& options, const std::string& self) {
  assert(withheld.kind == schedule::FireEvent::Kind::kWithheld);
  return notice_of(NotifyEvent::kWithheld, options.handler, withheld, self,
                   withheld.occ.scheduled_utc_ms + options.withheld_after_ms);
}

schedule::Entry notification_entry(const Notice& n, const std::string& origin, int64_t window_ms) {
  assert(!n.handler.empty());
  schedule::Entry e;
  e.entity = std::string(kNotifyEntity);
  uint64_t h = hash64(n.volume);
  h = hash_combine(h, hash64(n.occ.entry_key));
  h = hash_combine(h, static_cast<uint64_t>(n.occ.scheduled_utc_ms));
  h = hash_combine(h, hash64(to_string(n.event)));
  h = hash_combine(h, hash64(n.handler));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  e.name = std::string(to_string(n.event)) + "-" + hex;
  schedule::Timer t;
  t.kind = schedule::TimerKind::at;
  t.at_utc_ms = n.instant_utc_ms;
  e.timing = t;
  e.created_utc_ms = n.instant_utc_ms;
  e.handler = n.handler;
  // Withheld is told by the minority that withholds: it must be able to run it.
  e.semantics = n.event == NotifyEvent::kWithheld ? schedule::Semantics::at_least_once
                                                  : schedule::Semantics::at_most_once;
  e.origin = origin;
  e.misfire = schedule::MisfirePolicy::fire_once;
  e.misfire_window_ms = window_ms;
  const auto parts = schedule::split_entry_key(n.occ.entry_key);
  nlohmann::json p;
  p["event"] = std::string(to_string(n.event));
  p["volume"] = n.volume;
  p["entity"] = parts ? std::string(parts->entity) : std::string();
  p["name"] = parts ? std::string(parts->name) : std::string();
  p["scheduled"] = format_rfc3339_utc(n.occ.scheduled_utc_ms);
  p["at_most_once"] = n.at_most_once;
  if (n.event == NotifyEvent::kOnFailure || n.event == NotifyEvent::kFailed) p["run"] = n.run;
  p["node"] = n.node;
  p["detail"] = n.detail;
  e.payload = p.dump();
  if (e.payload.size() > schedule::kMaxPayloadBytes) {
    p["detail"] = n.detail.substr(0, 1024);
    e.payload = p.dump();
  }
  return e;
}

}  // namespace caesium::node
