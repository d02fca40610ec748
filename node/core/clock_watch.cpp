// ClockWatch: see clock_watch.h.
#include "node/core/clock_watch.h"

#include <algorithm>

namespace caesium::node {

void ClockWatch::roll(Peer& p, int64_t now_mono_ms) const {
  const int64_t elapsed = now_mono_ms - p.bucket_start_mono;
  if (elapsed < options_.window_ms) return;
  if (elapsed < 2 * options_.window_ms) {
    p.previous = p.current;
    p.has_previous = p.has_current;
    p.bucket_start_mono += options_.window_ms;
  } else {
    p.has_previous = false;
    p.bucket_start_mono = now_mono_ms;
  }
  p.has_current = false;
}

std::optional<int64_t> ClockWatch::observe(uint64_t peer_hash, int64_t sent_utc_ms, int64_t now_utc_ms,
                                           int64_t now_mono_ms) {
  Peer& p = peers_.get_or_insert(peer_hash);
  if (!p.has_current && !p.has_previous) p.bucket_start_mono = now_mono_ms;
  roll(p, now_mono_ms);
  const int64_t bound = sent_utc_ms - now_utc_ms;
  p.current = p.has_current ? std::max(p.current, bound) : bound;
  p.has_current = true;
  // Warnings look at the current bucket alone, so a clock that was just fixed is not
  // warned about again on the strength of the bucket before.
  if (options_.warn_above_ms <= 0 || p.current <= options_.warn_above_ms || now_mono_ms < p.next_warning_mono) {
    return std::nullopt;
  }
  p.next_warning_mono = now_mono_ms + options_.warn_every_ms;
  return p.current;
}

std::optional<int64_t> ClockWatch::ahead_at_least(uint64_t peer_hash, int64_t now_mono_ms) const {
  const Peer* found = peers_.find(peer_hash);
  if (found == nullptr) return std::nullopt;
  Peer p = *found;
  roll(p, now_mono_ms);
  if (p.has_current && p.has_previous) return std::max(p.current, p.previous);
  if (p.has_current) return p.current;
  if (p.has_previous) return p.previous;
  return std::nullopt;
}

}  // namespace caesium::node
