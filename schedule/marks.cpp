#include "schedule/marks.h"

namespace caesium::schedule {
namespace marks_detail {
bool enabled = false;
uint64_t hits[kMarkCount] = {};
}  // namespace marks_detail

namespace {
struct Info {
  std::string_view name;
  std::string_view text;
};
constexpr Info kInfo[] = {
#define CAESIUM_MARK(id, text) {std::string_view(#id).substr(1), text},
#include "schedule/marks.def"
#undef CAESIUM_MARK
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kMarkCount);
}  // namespace

void enable_marks(bool on) { marks_detail::enabled = on; }

void reset_marks() {
  for (uint64_t& h : marks_detail::hits) h = 0;
}

uint64_t mark_hits(Mark m) { return marks_detail::hits[static_cast<size_t>(m)]; }
std::string_view mark_name(Mark m) { return kInfo[static_cast<size_t>(m)].name; }
std::string_view mark_description(Mark m) { return kInfo[static_cast<size_t>(m)].text; }

}  // namespace caesium::schedule
