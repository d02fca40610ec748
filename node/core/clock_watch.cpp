// ClockWatch: see clock_watch.h.
#include "node/core/clock_watch.h"

#include <algorithm>

namespace caesium::node {
namespace {

int32_t seconds(int64_t mono_ms) { return static_cast<int32_t>(std::clamp<int64_t>(mono_ms / 1000, 0, INT32_MAX)); }

}  // namespace

void ClockWatch::roll(Peer& p, int64_t now_mono_ms) const {
  const int64_t elapsed = now_mono_ms - int64_t{p.bucket_start_s} * 1000;
  if (elapsed < options_.window_ms) return;
  if (elapsed < 2 * options_.window_ms) {
    p.previous = p.current;
    p.bucket_start_s = seconds(int64_t{p.bucket_start_s} * 1000 + options_.window_ms);
  } else {
    p.previous = kNone;
    p.bucket_start_s = seconds(now_mono_ms);
  }
  p.current = kNone;
}

std::optional<int64_t> ClockWatch::observe(Peer& p, int64_t sent_utc_ms, int64_t now_utc_ms,
                                           int64_t now_mono_ms) const {
  const bool first = p.current == kNone && p.previous == kNone;  // or the first after a silence
  if (first) p.bucket_start_s = seconds(now_mono_ms);
  roll(p, now_mono_ms);
  const auto bound = static_cast<int32_t>(std::clamp<int64_t>(sent_utc_ms - now_utc_ms, INT32_MIN + 1, INT32_MAX));
  p.current = std::max(p.current, bound);  // kNone is below every bound
  // Warnings look at the current bucket alone, so a clock that was just fixed is not
  // warned about again on the strength of the bucket before.
  const int32_t now_s = seconds(now_mono_ms);
  const int64_t since_mono = sent_utc_ms - now_mono_ms;
  if (first || since_mono >= p.latest || now_s - p.latest_s >= 1) {
    p.latest = since_mono;
    p.latest_s = now_s;
  }
  if (options_.warn_above_ms <= 0 || p.current <= options_.warn_above_ms || now_s < p.next_warning_s) {
    return std::nullopt;
  }
  p.next_warning_s = seconds((int64_t{now_s} * 1000) + options_.warn_every_ms);
  return p.current;
}

std::optional<int64_t> ClockWatch::ahead_at_least(const Peer& peer, int64_t now_mono_ms) const {
  Peer p = peer;
  roll(p, now_mono_ms);
  const int32_t best = std::max(p.current, p.previous);
  if (best == kNone) return std::nullopt;
  return best;
}

std::optional<int64_t> ClockWatch::ahead_now(const Peer& p, int64_t now_utc_ms, int64_t now_mono_ms) const {
  if (!ahead_at_least(p, now_mono_ms)) return std::nullopt;  // nothing recent
  return p.latest + now_mono_ms - now_utc_ms;
}

}  // namespace caesium::node
