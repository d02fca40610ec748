#include "schedule/zone.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <date/tz.h>

#include "schedule/zone_posix.h"

namespace caesium::schedule {

// The immutable, cached form of one zone.
//
// Invariants: transitions are sorted by utc_s, strictly increasing, and each one changes
// the offset (offset_before_s != offset_after_s); transitions[i].offset_before_s equals
// transitions[i-1].offset_after_s (or initial_offset_s for i = 0).
struct ZoneData {
  std::string name;
  int32_t initial_offset_s = 0;
  std::vector<ZoneTransition> transitions;
};

namespace {

// Where the Debian build of date (USE_OS_TZDB=1) reads its TZif files.
constexpr const char* kZoneInfoDir = "/usr/share/zoneinfo/";

const ZoneData& utc_data() {
  static const ZoneData data{"UTC", 0, {}};
  return data;
}

// The POSIX TZ rule in a TZif (v2+) file's footer: the text between the last two
// newlines.  Empty when the file cannot be read or has no footer.
std::string read_footer(const std::string& zone_name) {
  // sans-io-exception: the time-zone database is read-only reference data, read once per
  // zone (as date::locate_zone itself does); no state, clock or order depends on it.
  std::ifstream in(kZoneInfoDir + zone_name, std::ios::binary);  // sans-io-exception
  if (!in) return {};
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 6 || bytes.compare(0, 4, "TZif") != 0 || bytes[4] < '2') return {};
  if (bytes.back() != '\n') return {};
  const size_t start = bytes.rfind('\n', bytes.size() - 2);
  if (start == std::string::npos) return {};
  return bytes.substr(start + 1, bytes.size() - start - 2);
}

// Converts a date::time_zone into our flat table.  Walks date's sys_info ranges from
// 1800 on (earlier history does not matter to a scheduler), keeping only real offset
// changes (date also starts a new range when just the abbreviation changes).
ZoneData load(const date::time_zone& tz, const std::string& requested_name) {
  ZoneData data;
  data.name = requested_name;
  using date::sys_seconds;
  sys_seconds tp{date::sys_days{date::year{1800} / 1 / 1}};
  const sys_seconds stop{date::sys_days{date::year{9999} / 1 / 1}};
  auto info = tz.get_info(tp);
  data.initial_offset_s = static_cast<int32_t>(info.offset.count());
  int32_t offset = data.initial_offset_s;
  int last_year = 1800;
  while (info.end > tp && info.end < stop) {
    tp = info.end;
    info = tz.get_info(tp);
    const auto next = static_cast<int32_t>(info.offset.count());
    if (next == offset) continue;
    data.transitions.push_back({tp.time_since_epoch().count(), offset, next});
    offset = next;
    last_year = static_cast<int>(date::year_month_day{date::floor<date::days>(tp)}.year());
  }
  const std::string footer = read_footer(tz.name());
  if (!footer.empty()) {
    auto rule = parse_posix_tz(footer);
    if (rule.ok()) {
      append_posix_transitions(*rule, last_year, kZoneTableEndYear, offset, data.transitions);
    }
  }
  return data;
}

std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, std::unique_ptr<const ZoneData>, std::less<>>& cache() {
  static std::map<std::string, std::unique_ptr<const ZoneData>, std::less<>> zones;
  return zones;
}

bool plausible_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
           c == '+';
  });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// A known zone name (with the OS database, links are zones too) equal to `name` ignoring case, or "".
std::string case_insensitive_match(std::string_view name) {
  const auto& db = date::get_tzdb();
  for (const auto& z : db.zones) {
    if (iequals(z.name(), name)) return z.name();
  }
  return {};
}

std::string shown(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 80)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return out;
}

}  // namespace

Zone::Zone() : data_(&utc_data()) {}

Result<Zone> Zone::find(std::string_view name) {
  if (name == "UTC") return Zone();
  if (!plausible_name(name)) {
    return Error("unknown time zone '" + shown(name) +
                     "': expected an IANA zone name such as \"Europe/London\" or \"UTC\"",
                 "tz");
  }
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& zones = cache();
  if (auto it = zones.find(name); it != zones.end()) return Zone(it->second.get());
  const std::string key(name);
  try {
    const date::time_zone* tz = date::locate_zone(key);
    auto data = std::make_unique<const ZoneData>(load(*tz, key));
    const ZoneData* raw = data.get();
    zones.emplace(key, std::move(data));
    return Zone(raw);
  } catch (const std::exception&) {
    std::string msg = "unknown time zone '" + key + "'";
    try {
      const std::string near = case_insensitive_match(key);
      if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    } catch (const std::exception&) {
      // The zone list itself is unavailable; the plain message is all we can say.
    }
    return Error(msg + " (expected an IANA zone name such as \"Europe/London\" or \"UTC\")", "tz");
  }
}

const std::string& Zone::name() const { return data_->name; }

bool Zone::is_fixed() const { return data_->transitions.empty(); }

std::span<const ZoneTransition> Zone::transitions() const { return data_->transitions; }

int32_t Zone::offset_at(int64_t utc_s) const {
  const auto& ts = data_->transitions;
  // The last transition at or before utc_s decides.
  auto it = std::upper_bound(ts.begin(), ts.end(), utc_s,
                             [](int64_t t, const ZoneTransition& z) { return t < z.utc_s; });
  return it == ts.begin() ? data_->initial_offset_s : std::prev(it)->offset_after_s;
}

LocalMapping Zone::map_local(int64_t local_s) const {
  const auto& ts = data_->transitions;
  // Each transition disturbs the local interval [t + min(before, after), t + max(...)):
  // skipped when the offset grows, repeated when it shrinks.  Transitions are months
  // apart and shifts are hours, so these intervals are sorted like the transitions.
  auto lo = [](const ZoneTransition& z) {
    return z.utc_s + std::min(z.offset_before_s, z.offset_after_s);
  };
  auto it = std::partition_point(ts.begin(), ts.end(),
                                 [&](const ZoneTransition& z) { return lo(z) <= local_s; });
  if (it == ts.begin()) {
    const int64_t u = local_s - data_->initial_offset_s;
    return {LocalMapping::Kind::unique, u, u};
  }
  const ZoneTransition& z = *std::prev(it);
  const int64_t hi = z.utc_s + std::max(z.offset_before_s, z.offset_after_s);
  if (local_s < hi) {
    if (z.offset_after_s > z.offset_before_s) return {LocalMapping::Kind::skipped, z.utc_s, z.utc_s};
    return {LocalMapping::Kind::repeated, local_s - z.offset_before_s, local_s - z.offset_after_s};
  }
  const int64_t u = local_s - z.offset_after_s;
  return {LocalMapping::Kind::unique, u, u};
}

ZoneSegment Zone::make_segment(size_t index) const {
  const auto& ts = data_->transitions;
  ZoneSegment seg;
  seg.index = index;
  seg.offset_s = index == 0 ? data_->initial_offset_s : ts[index - 1].offset_after_s;
  seg.prev_offset_s = seg.offset_s;
  seg.next_offset_s = seg.offset_s;
  if (index > 0) {
    seg.start_utc_s = ts[index - 1].utc_s;
    seg.prev_offset_s = ts[index - 1].offset_before_s;
  }
  if (index < ts.size()) {
    seg.end_utc_s = ts[index].utc_s;
    seg.next_offset_s = ts[index].offset_after_s;
  }
  return seg;
}

ZoneSegment Zone::segment_at(int64_t utc_s) const {
  const auto& ts = data_->transitions;
  auto it = std::upper_bound(ts.begin(), ts.end(), utc_s,
                             [](int64_t t, const ZoneTransition& z) { return t < z.utc_s; });
  return make_segment(static_cast<size_t>(it - ts.begin()));
}

ZoneSegment Zone::next_segment(const ZoneSegment& seg) const {
  assert(seg.has_next());
  return make_segment(seg.index + 1);
}

}  // namespace caesium::schedule
