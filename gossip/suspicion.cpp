#include "gossip/suspicion.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace caesium::gossip {

int64_t suspicion_timeout_min_ms(int suspicion_mult, size_t n, int64_t probe_interval_ms) {
  const double node_scale = std::max(1.0, std::log10(std::max(1.0, static_cast<double>(n))));
  // Millisecond precision is plenty; the product is exact for the small factors in use.
  return static_cast<int64_t>(
      std::floor(static_cast<double>(suspicion_mult) * node_scale * static_cast<double>(probe_interval_ms)));
}

int retransmit_limit(int retransmit_mult, size_t n) {
  const double node_scale = std::ceil(std::log10(static_cast<double>(n) + 1.0));
  return retransmit_mult * static_cast<int>(node_scale);
}

int64_t push_pull_interval_ms(int64_t base_interval_ms, size_t n) {
  constexpr size_t kScaleThreshold = 32;
  if (n <= kScaleThreshold) return base_interval_ms;
  const double multiplier =
      std::ceil(std::log2(static_cast<double>(n)) - std::log2(static_cast<double>(kScaleThreshold))) + 1.0;
  return static_cast<int64_t>(multiplier) * base_interval_ms;
}

int64_t suspicion_timeout_ms(int confirmations, int k, int64_t min_ms, int64_t max_ms) {
  assert(min_ms >= 0);
  assert(min_ms <= max_ms);
  assert(k >= 1);
  assert(confirmations >= 0);
  const double frac = std::log(static_cast<double>(confirmations) + 1.0) / std::log(static_cast<double>(k) + 1.0);
  const double raw = static_cast<double>(max_ms) - frac * static_cast<double>(max_ms - min_ms);
  return std::max(min_ms, static_cast<int64_t>(std::floor(raw)));
}

Suspicion::Suspicion(std::string_view originator, int k, int64_t min_ms, int64_t max_ms, int64_t start_ms)
    : k_(k), min_ms_(min_ms), max_ms_(max_ms), start_ms_(start_ms) {
  assert(k >= 0);
  assert(min_ms >= 0);
  assert(min_ms <= max_ms);
  confirmed_.emplace(originator);
}

bool Suspicion::confirm(std::string_view from) {
  if (confirmations_ >= k_) return false;
  if (!confirmed_.emplace(from).second) return false;
  ++confirmations_;
  return true;
}

int64_t Suspicion::deadline_ms() const {
  if (k_ == 0) return start_ms_ + max_ms_;
  return start_ms_ + suspicion_timeout_ms(confirmations_, k_, min_ms_, max_ms_);
}

void Suspicion::check_invariants() const {
  assert(confirmations_ >= 0);
  assert(confirmations_ <= k_);
  assert(static_cast<int>(confirmed_.size()) == confirmations_ + 1);
  assert(deadline_ms() >= start_ms_ + min_ms_);
  assert(deadline_ms() <= start_ms_ + max_ms_);
}

}  // namespace caesium::gossip
