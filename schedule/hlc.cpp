#include "schedule/hlc.h"

#include <limits>
#include <utility>

namespace caesium::schedule {

HlcTime hlc_successor(HlcTime t) {
  if (t.logical == std::numeric_limits<uint32_t>::max()) return HlcTime{t.physical_ms + 1, 0};
  return HlcTime{t.physical_ms, t.logical + 1};
}

Hlc::Hlc(std::string origin, Options options) : origin_(std::move(origin)), options_(options) {}

HlcTime Hlc::tick_time(int64_t now_utc_ms) {
  // Real time moved past everything seen: restart the logical counter.  Otherwise (same
  // millisecond, or the local clock went backwards) count on from the last time.
  last_ = now_utc_ms > last_.physical_ms ? HlcTime{now_utc_ms, 0} : hlc_successor(last_);
  return last_;
}

Version Hlc::tick(int64_t now_utc_ms) {
  const HlcTime t = tick_time(now_utc_ms);
  return Version{t.physical_ms, t.logical, origin_};
}

bool Hlc::observe_time(HlcTime remote, int64_t now_utc_ms) {
  // Saturating: a remote time near INT64_MAX must not overflow the comparison.
  const int64_t bound = now_utc_ms > std::numeric_limits<int64_t>::max() - options_.max_future_ms
                            ? std::numeric_limits<int64_t>::max()
                            : now_utc_ms + options_.max_future_ms;
  if (remote.physical_ms > bound) {
    ++clamped_;
    return false;
  }
  // Kulkarni's receive rule, written as "the larger of the two times, then step past it";
  // a later tick() then gives a time above both.  Only max() matters here because tick()
  // does the +1, so observing never consumes logical values needlessly.
  if (remote > last_) last_ = remote;
  if (now_utc_ms > last_.physical_ms) last_ = HlcTime{now_utc_ms, 0};
  return true;
}

}  // namespace caesium::schedule
