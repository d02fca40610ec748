// Zone: an IANA time zone as the schedule code needs it — the UTC offset at an instant,
// the mapping of a local wall-clock time back to UTC (unique, skipped or repeated), and
// the list of offset changes that the cron search walks segment by segment.
//
// Data comes from the OS tz database through date/tz.h (`date::locate_zone`).  Two facts
// about that source shape this file:
//   - locate_zone and date's get_info are slow (the first call scans the zoneinfo tree;
//     each get_info is a search plus date arithmetic), so each zone is converted once into
//     a flat, sorted table of transitions and cached for the life of the process.
//   - The OS-tzdb build of date only knows the explicit transitions in the TZif file,
//     which end in 2037; later years are described by the POSIX TZ rule in the file's
//     footer ("EST5EDT,M3.2.0,M11.1.0").  We read that rule and extend the table through
//     the year kZoneTableEndYear, so a schedule in 2040 gets the right daylight-saving
//     offset.  After that year the last offset is used.
//
// Loading a zone reads files (once per zone name, inside Zone::find); this is the one
// place in schedule/ that touches the disk, and it is the same read date::locate_zone
// does.  Everything after find() is pure arithmetic on immutable data.
//
// Thread safety: Zone::find is safe to call from several threads (the cache is guarded
// by a mutex).  A Zone is a pointer to immutable cached data: copying it is free and
// reading it from any thread is safe.  The cache is never emptied, so a Zone stays valid
// for the life of the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace caesium::schedule {

// Years for which the daylight-saving rules are expanded into transitions.
inline constexpr int kZoneTableEndYear = 2500;

// One change of UTC offset.  From `utc_s` on (inclusive) the offset is offset_after_s.
struct ZoneTransition {
  int64_t utc_s = 0;
  int32_t offset_before_s = 0;  // seconds east of UTC before the change
  int32_t offset_after_s = 0;   // seconds east of UTC from utc_s on
};

// A stretch of UTC time with one offset: [start_utc_s, end_utc_s).  The first segment
// starts at INT64_MIN and the last ends at INT64_MAX.  prev/next offsets are those of the
// neighbouring segments (equal to offset_s when there is no neighbour).
struct ZoneSegment {
  size_t index = 0;  // 0 .. transitions().size()
  int64_t start_utc_s = std::numeric_limits<int64_t>::min();
  int64_t end_utc_s = std::numeric_limits<int64_t>::max();
  int32_t offset_s = 0;
  int32_t prev_offset_s = 0;
  int32_t next_offset_s = 0;

  bool has_prev() const { return start_utc_s != std::numeric_limits<int64_t>::min(); }
  bool has_next() const { return end_utc_s != std::numeric_limits<int64_t>::max(); }
};

// What a local wall-clock time means in UTC.
struct LocalMapping {
  enum class Kind : uint8_t {
    unique,    // exactly one instant: first_utc_s == second_utc_s
    skipped,   // in a gap (clocks jumped forward); both fields hold the instant the gap ends
    repeated,  // in an overlap (clocks went back); first_utc_s < second_utc_s
  };
  Kind kind = Kind::unique;
  int64_t first_utc_s = 0;
  int64_t second_utc_s = 0;
};

struct ZoneData;  // defined in zone.cpp

class Zone {
 public:
  // UTC.  A default-constructed Zone is UTC.
  Zone();
  static Zone utc() { return Zone(); }

  // Finds an IANA zone by name ("Europe/London", "UTC", "Etc/GMT+5").  Unknown or
  // malformed names are an Error with field "tz"; when a name differs from a known zone
  // only by letter case the message suggests it.  The first call for a name loads and
  // caches the zone; later calls are a map lookup under a mutex.
  static Result<Zone> find(std::string_view name);

  // The name as given to find() ("UTC" for utc()).
  const std::string& name() const;

  // Seconds east of UTC in effect at `utc_s` (seconds since the Unix epoch).
  int32_t offset_at(int64_t utc_s) const;

  // Maps a local wall-clock time (seconds since 1970-01-01T00:00 local) to UTC.
  LocalMapping map_local(int64_t local_s) const;

  // True when the zone never changes offset (UTC, Etc/GMT+5 ...).
  bool is_fixed() const;

  // All offset changes, sorted by utc_s, strictly increasing.
  std::span<const ZoneTransition> transitions() const;

  // The segment containing `utc_s`, and the one after `seg` (REQUIRES: seg.has_next()).
  ZoneSegment segment_at(int64_t utc_s) const;
  ZoneSegment next_segment(const ZoneSegment& seg) const;

  friend bool operator==(const Zone& a, const Zone& b) { return a.data_ == b.data_; }

 private:
  explicit Zone(const ZoneData* data) : data_(data) {}
  ZoneSegment make_segment(size_t index) const;

  const ZoneData* data_;
};

}  // namespace caesium::schedule
