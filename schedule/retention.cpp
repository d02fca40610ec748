#include "schedule/retention.h"

#include <algorithm>
#include <vector>

#include "schedule/occurrence.h"

namespace caesium::schedule {

RetentionSweep::Step RetentionSweep::step(VolumeStore& store, int64_t horizon_utc_ms, size_t max_visits) {
  Step s;
  if (!running_) {
    s.done = true;
    return s;
  }
  max_visits = std::max<size_t>(max_visits, 1);
  std::vector<std::string> expired;
  std::string last;
  s.visited = store.scan(kOccPrefix, cursor_, max_visits, [&](const RecordView& r) {
    const auto parsed = split_occ_key(r.key);
    if (!parsed || parsed->scheduled_utc_ms < horizon_utc_ms) expired.emplace_back(r.key);
    last.assign(r.key);
  }, /*include_tombstones=*/true);
  // Removing keys at or before the cursor does not move what lies after it.
  for (const auto& k : expired) {
    if (store.remove_local(k)) ++s.dropped;
  }
  if (s.visited < max_visits) {
    running_ = false;
    cursor_.clear();
    s.done = true;
  } else {
    cursor_ = std::move(last);
  }
  return s;
}

}  // namespace caesium::schedule
