// Coverage marks in the simulator (schedule/marks.h): which rare branches of the firing
// core a run reached.  `caesium sim` turns counting on, writes the marks a run hit
// (--marks-out FILE: "name count" per line), and `caesium sim --check-marks DIR` fails,
// naming them, when a mark of the binary's list is named by no file in DIR — the sim:marks
// ctest, run after every other sim test has written its file.  The list is read from the
// binary (schedule/marks.def as compiled), never written down here.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace caesium::sim {

// Every mark's hit count since the counters were last reset, in the list's order.
std::vector<uint64_t> mark_counts();
// "name count" lines for the marks with a count above zero.
std::string format_marks_hit(const std::vector<uint64_t>& counts);
// The names of the marks whose count is zero.
std::vector<std::string> marks_never_hit(const std::vector<uint64_t>& counts);
// "name  description" for every mark.
std::string format_mark_list();

// The marks the files `dir`/*.marks name (the first word of each line).
Result<std::set<std::string>> read_marks_dir(const std::string& dir);
// The marks of the binary's list missing from `hit`, in the list's order.
std::vector<std::string> marks_missing(const std::set<std::string>& hit);

}  // namespace caesium::sim
