// Node: notifications (notify.h).  The node notices the events its scheduler emits, and
// writes a notification entry for each one that calls for it; the entry then fires like
// any other.  Withheld occurrences are watched until notify.withheld_after past their due
// time.  Notification entries past the occurrence retention are deleted by maintenance.
#include <algorithm>
#include <cassert>

#include "node/core/node.h"
#include "schedule/entry_codec.h"

namespace caesium::node {

void Node::notice(const schedule::FireEvent& event) {
  using K = schedule::FireEvent::Kind;
  const NotifyOptions& opts = options_.notify;
  if (event.kind == K::kWithheld) {
    if (opts.handler.empty() || !opts.withheld || is_notification_key(event.occ.entry_key)) return;
    if (withheld_watch_.size() >= kMaxWithheldWatched) return;  // counted nowhere: an outage this wide is loud anyway
    withheld_watch_.emplace(event.occ.scheduled_utc_ms + opts.withheld_after_ms, event);
    return;
  }
  if (event.kind != K::kCompleted && event.kind != K::kMissed && event.kind != K::kLost) return;
  std::optional<schedule::Entry> subject;
  if (event.kind == K::kCompleted) {
    if (event.ok || event.replaced) return;
    auto it = volumes_.find(event.volume);
    if (it != volumes_.end()) {
      if (auto rec = it->second.store->find(event.occ.entry_key); rec && rec->value) {
        if (auto e = schedule::decode_entry(*rec->value); e.ok()) subject = std::move(*e);
      }
    }
  }
  for (Notice& n : notices_for(event, subject ? &*subject : nullptr, opts, options_.id)) {
    notices_.push_back(std::move(n));
  }
}

bool Node::write_notices(Clock now) {
  if (notices_.empty()) return false;
  // Half the retention: the notification's occurrence records are kept a whole one.
  const int64_t window = options_.scheduler.occurrence_retention_ms / 2;
  while (!notices_.empty()) {
    const Notice n = std::move(notices_.front());
    notices_.pop_front();
    auto it = volumes_.find(n.volume);
    if (it == volumes_.end() || it->second.departing) continue;
    if (n.instant_utc_ms < now.utc_ms - window) {
      ++counters_.notifications_too_late;
      continue;
    }
    const schedule::Entry e = notification_entry(n, options_.id, window);
    const std::string key = schedule::entry_key(e);
    // Written already (here or by another node that noticed the same event), or written
    // and deleted past retention: once is all.
    if (it->second.store->find(key)) continue;
    schedule::Record rec = it->second.store->put(key, schedule::encode_entry(e), now.utc_ms);
    it->second.push[rec.key] = rec;
    ++counters_.notifications_written;
  }
  return true;
}

void Node::check_withheld(Clock now) {
  while (!withheld_watch_.empty() && withheld_watch_.begin()->first <= now.utc_ms) {
    const schedule::FireEvent event = std::move(withheld_watch_.begin()->second);
    withheld_watch_.erase(withheld_watch_.begin());
    if (scheduler_->withheld(event.volume, event.occ)) {
      notices_.push_back(withheld_notice(event, options_.notify, options_.id));
    }
  }
}

int64_t Node::next_withheld_check_mono() const {
  if (withheld_watch_.empty()) return kNever;
  return last_.mono_ms + std::max<int64_t>(0, withheld_watch_.begin()->first - last_.utc_ms);
}

size_t Node::purge_notifications(const std::string& volume, Clock now, size_t budget) {
  auto it = volumes_.find(volume);
  if (it == volumes_.end() || budget == 0) return 0;
  VolumeState& v = it->second;
  const std::string prefix = std::string(kNotifyEntity) + "/";
  std::vector<std::string> expired;
  std::string last;
  const size_t visited = v.store->scan(prefix, v.notify_purge_after, budget, [&](const schedule::RecordView& r) {
    last = std::string(r.key);
    if (!r.value || !schedule::is_entry_key(r.key)) return;
    auto e = schedule::decode_entry(*r.value);
    if (e.ok() && e->created_utc_ms < now.utc_ms - options_.scheduler.occurrence_retention_ms) {
      expired.push_back(last);
    }
  });
  // A pass that reached the end starts again from the first key next time.
  v.notify_purge_after = visited < budget ? std::string() : last;
  for (const std::string& key : expired) {
    schedule::Record rec = v.store->erase(key, now.utc_ms);
    v.push[rec.key] = rec;
    ++counters_.notifications_deleted;
  }
  return visited;
}

}  // namespace caesium::node
