// Notifications (docs/entries.md, "Notifications"): an entry's `on_failure` handler, and
// the cluster's notify handler for failed, missed, lost and long-withheld occurrences.
//
// A notification is not sent by the node that sees the event: it becomes an entry of its
// own, a one-shot timer in the same volume under the reserved entity `caesium.notify`,
// whose handler is the notify handler and whose payload describes the event.  It then
// fires through the ordinary claim path, so "once per event" is the firing guarantee:
//
//   - its key is a hash of (volume, entry, occurrence, event, handler), and its creation
//     instant and due time come from the event itself, not from the clock of the node
//     that noticed it — two nodes that notice the same event (two masters each finding
//     one occurrence missed, two workers each running and failing the last run of an
//     at-least-once occurrence) write the same entry, which the stores merge into one,
//     with one occurrence;
//   - failed, missed and lost are sent at most once (at_most_once: a majority of the
//     volume's replicas must grant its claim, so a node cut off from them sends it after
//     the heal); withheld at least once (a withheld occurrence is one a minority holds,
//     and the minority must be able to say so: two sides of a split may each send one,
//     flagged possible_duplicate);
//   - a notification entry is never the subject of one;
//   - the node deletes notification entries once their occurrence is past the occurrence
//     retention (maintenance).
//
// Pure functions here; the Node notices the events and writes the entries (node.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schedule/entry.h"
#include "schedule/occurrence.h"
#include "schedule/scheduler.h"

namespace caesium::node {

// The entity notification entries are written under (reserved: an entry written there by
// a client is treated as a notification too: nothing notifies about it).
inline constexpr std::string_view kNotifyEntity = "caesium.notify";

// The cluster-wide notify handler ([notify] in the node's TOML; the same on every node).
struct NotifyOptions {
  std::string handler;  // empty: no cluster-wide notifications
  bool failed = true;
  bool missed = true;
  bool lost = true;
  bool withheld = true;
  // An at-most-once occurrence still withheld this long after its due time is notified.
  int64_t withheld_after_ms = 60'000;
};

enum class NotifyEvent : uint8_t { kOnFailure, kFailed, kMissed, kLost, kWithheld };
std::string_view to_string(NotifyEvent e);

// One event to notify, as the node noticed it.
struct Notice {
  NotifyEvent event = NotifyEvent::kFailed;
  std::string handler;  // who is run
  std::string volume;
  schedule::OccurrenceId occ;
  // The notification's due instant (and creation instant): derived from the event so that
  // every node that notices it computes the same one (see the top of this file).
  int64_t instant_utc_ms = 0;
  uint32_t run = 0;     // failed: the run that failed
  std::string node;     // who noticed it (failed: the worker)
  std::string detail;   // the scheduler's reason
  bool at_most_once = false;  // the subject's semantics
};

// The notices a fire event calls for.  `subject` is the stored definition of the event's
// entry (null when it is gone).  Empty for events that notify nobody, and always for a
// notification entry's own events.
std::vector<Notice> notices_for(const schedule::FireEvent& event, const schedule::Entry* subject,
                                const NotifyOptions& options, const std::string& self);

// The notice for an occurrence a kWithheld event began to withhold, once it is still
// withheld options.withheld_after_ms after its due time (the node watches it).  Its
// instant is that moment, the same for every node that withholds it.
Notice withheld_notice(const schedule::FireEvent& withheld, const NotifyOptions& options, const std::string& self);

// The notification entry for `n`: a one-shot timer at n.instant_utc_ms, created then,
// with a misfire window of `window_ms` (an event noticed later than that after its instant
// is not notified: its occurrence records might already be gone).
schedule::Entry notification_entry(const Notice& n, const std::string& origin, int64_t window_ms);

// Whether `entry_key` names a notification entry.
bool is_notification_key(std::string_view entry_key);

}  // namespace caesium::node
