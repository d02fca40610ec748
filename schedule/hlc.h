// Hybrid logical clock (Kulkarni, Demirbas et al., "Logical Physical Clocks", 2014) and
// the Version every record of a volume store carries.
//
// A Version is (physical_ms, logical, origin).  physical_ms follows the writer's realtime
// clock, logical orders events inside one millisecond (and while the local clock is behind
// the largest time seen), origin is the writing node's id and breaks ties, so two writes by
// different nodes never compare equal.  The order is lexicographic on the three fields.
//
// The clock keeps the largest time t = (l, c) it has issued or seen:
//   tick(now):       t' = (now, 0) if now > l, else (l, c + 1)
//   observe(r, now): t' = max(t, r, (now, 0))            (pairs compared lexicographically)
// This is Kulkarni's rule with the "+1 on receive" moved into the next tick(), which gives
// the same guarantee: a version made by tick() is greater than every version made or
// observed before it.  A local clock that goes backwards only makes the logical part grow
// until real time catches up; physical never exceeds max(real time seen, remote times
// accepted) by more than the logical-overflow carries below.
//
// Drift bound (a decision, see docs/store.md): observe() does not move the clock when the
// remote version is more than `max_future_ms` ahead of the local realtime clock.  Such a
// version is not rejected by the store — refusing it would make replicas disagree forever —
// it is merged like any other and counted (clamped_observations()).  What keeps it from
// being unoverwritable is the store's per-key rule: a local write to a key is always given a
// version above the one this replica holds for that key (VolumeStore::put), so a record
// stamped by a clock from the far future can still be replaced or deleted.  The bound only
// stops one bad clock from dragging every node's clock (and so every later version) into
// the future.
//
// Logical overflow: after 2^32 - 1 events in one millisecond the physical part is advanced
// by one millisecond artificially.  Sans-IO: time comes in as an argument.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace caesium::schedule {

struct Version {
  int64_t physical_ms = 0;
  uint32_t logical = 0;
  std::string origin;

  // Total order: (physical_ms, logical, origin).
  friend std::strong_ordering operator<=>(const Version& a, const Version& b) {
    if (auto c = a.physical_ms <=> b.physical_ms; c != 0) return c;
    if (auto c = a.logical <=> b.logical; c != 0) return c;
    return a.origin.compare(b.origin) <=> 0;
  }
  friend bool operator==(const Version& a, const Version& b) = default;
};

// The (physical, logical) part of a version, without the origin: what the clock keeps.
struct HlcTime {
  int64_t physical_ms = 0;
  uint32_t logical = 0;
  friend auto operator<=>(const HlcTime&, const HlcTime&) = default;
};

// The smallest time strictly after t (logical + 1, or the next millisecond on overflow).
HlcTime hlc_successor(HlcTime t);

class Hlc {
 public:
  struct Options {
    // Remote versions further ahead of local realtime than this do not move the clock.
    int64_t max_future_ms = 60'000;
  };

  explicit Hlc(std::string origin) : Hlc(std::move(origin), Options{}) {}
  Hlc(std::string origin, Options options);

  // A new version, greater than every version this clock made or observed within the
  // drift bound.  now_utc_ms may go backwards.
  Version tick(int64_t now_utc_ms);
  // The same as tick() without building the origin string (hot path of the store).
  HlcTime tick_time(int64_t now_utc_ms);

  // Advances the clock past a version seen from elsewhere.  Returns false (and leaves the
  // clock alone) when `remote` is more than max_future_ms ahead of now_utc_ms.
  bool observe(const Version& remote, int64_t now_utc_ms) {
    return observe_time(HlcTime{remote.physical_ms, remote.logical}, now_utc_ms);
  }
  bool observe_time(HlcTime remote, int64_t now_utc_ms);

  const std::string& origin() const { return origin_; }
  HlcTime last() const { return last_; }
  uint64_t clamped_observations() const { return clamped_; }

 private:
  std::string origin_;
  Options options_;
  HlcTime last_;
  uint64_t clamped_ = 0;
};

}  // namespace caesium::schedule
