// Coverage marks (TigerBeetle's testing/marks.zig, FoundationDB's CODE_PROBE): every rare
// branch of the firing core names itself with `mark(Mark::kX)`, so the simulator can tell
// which of them some scenario or swarm seed reached, and a test can fail when a listed
// branch is reached by none (tests/sim: sim:marks).
//
// The list is schedule/marks.def, one line per mark: its id and what reaching it means.
// Counting is off unless a driver turns it on (the simulator does; the daemon never does),
// so in production a mark costs one predictable branch.  The counters are process-wide:
// they observe, and nothing in the protocol ever reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace caesium::schedule {

enum class Mark : uint16_t {
#define CAESIUM_MARK(id, text) id,
#include "schedule/marks.def"
#undef CAESIUM_MARK
};

inline constexpr size_t kMarkCount = 0
#define CAESIUM_MARK(id, text) +1
#include "schedule/marks.def"
#undef CAESIUM_MARK
    ;

namespace marks_detail {
extern bool enabled;
extern uint64_t hits[kMarkCount];
}  // namespace marks_detail

inline void mark(Mark m) {
  if (marks_detail::enabled) ++marks_detail::hits[static_cast<size_t>(m)];
}

// The driver's side.
void enable_marks(bool on);
void reset_marks();
uint64_t mark_hits(Mark m);
std::string_view mark_name(Mark m);         // the id without its leading 'k', e.g. "claim_split_vote"
std::string_view mark_description(Mark m);  // what reaching it means
inline Mark mark_at(size_t i) { return static_cast<Mark>(i); }

}  // namespace caesium::schedule
