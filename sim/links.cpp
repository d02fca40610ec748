#include "sim/links.h"

#include <algorithm>
#include <cassert>

namespace caesium::sim {

void LinkState::partition(const std::vector<std::vector<uint32_t>>& groups) {
  std::fill(group_.begin(), group_.end(), 0);
  uint32_t id = 1;
  for (const auto& g : groups) {
    for (uint32_t n : g) {
      assert(n < group_.size());
      group_[n] = id;
    }
    ++id;
  }
}

void LinkState::heal_all() {
  std::fill(group_.begin(), group_.end(), 0);
  cut_.clear();
}

bool LinkState::fully_connected() const {
  if (!cut_.empty()) return false;
  return std::all_of(group_.begin(), group_.end(), [&](uint32_t g) { return g == group_[0]; });
}

void LinkHistory::push(int64_t time_ms, LinkState state) {
  assert(time_ms >= states_.back().first);
  if (states_.back().first == time_ms) {
    states_.back().second = std::move(state);  // several changes at one instant: keep the last
  } else {
    states_.emplace_back(time_ms, std::move(state));
  }
}

bool LinkHistory::connected_throughout(uint32_t a, uint32_t b, int64_t from_ms,
                                       int64_t to_ms) const {
  // Walk back from the newest state; each state is in force from its time until the
  // next one's.  Stop after the state in force at from_ms.
  for (size_t i = states_.size(); i-- > 0;) {
    const auto& [since_ms, state] = states_[i];
    if (since_ms > to_ms) continue;
    if (!state.stream_ok(a, b)) return false;
    if (since_ms <= from_ms) break;
  }
  return true;
}

}  // namespace caesium::sim
