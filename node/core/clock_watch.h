// ClockWatch: how far each peer's realtime clock is ahead of ours, at least, from the
// sender times of the frames it sends (Envelope::sent_utc_ms), and a warning when that
// exceeds what the protocol assumes.
//
// Why: every node's clock is assumed within `max_clock_skew` of true time, so two clocks
// within twice it (docs/config.md).  The firing protocol leans on it — an occurrence runs
// once a majority of replicas' clocks say it is due, so a majority running ahead fires
// early by as much; a wiped node ignores dispatches issued (on the owner's clock) before
// its start plus twice the bound (on its own clock) — and nothing else in the node would
// notice a clock that broke it.
//
// The estimate needs no extra messages and never over-reports.  A frame stamped S by the
// peer's clock and opened when ours reads R left before it arrived, so at the instant it
// left the peer's clock was S and ours at most R: the peer is ahead by at least S - R
// (clock rates over a frame's flight are taken as equal).  Network and queueing delay only
// make the bound looser, so the tightest is the largest over recent frames.  The window is
// two buckets of `window_ms` on the monotonic clock: the estimate is the maximum of the
// current and the previous bucket, so a clock that was fixed stops being reported within
// two windows; warnings look at the current bucket only.  Only the node that is behind
// sees a positive bound; the peer that is ahead sees a negative one, which says nothing
// (it may be behind, or the link slow).
//
// Sans-IO: fed by the node as frames open; no clocks and no tables of its own.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>

namespace caesium::node {

class ClockWatch {
 public:
  struct Options {
    int64_t window_ms = 15'000;
    // A bound above this is a warning (2 x max_clock_skew: two clocks each within the
    // bound of true time differ by up to twice it).  <= 0: never.
    int64_t warn_above_ms = 2'000;
    // One warning per peer per this long while it lasts.
    int64_t warn_every_ms = 60'000;
  };

  // What is kept per peer: 24 bytes, held by the caller (the node keeps a table of them).
  // Bounds in int32 ms (±24 days, clamped); times in monotonic seconds.
  static constexpr int32_t kNone = INT32_MIN;
  struct Peer {
    int32_t bucket_start_s = 0;
    int32_t current = kNone;   // largest S - R in the current bucket
    int32_t previous = kNone;  // ... in the bucket before it
    int32_t next_warning_s = 0;
    int32_t latest_s = 0;      // when `latest` was taken (monotonic seconds)
    int32_t unused = 0;
    int64_t latest = 0;        // largest S - R_mono of the frames of the last 1-2 s (R_mono: our monotonic clock)
  };
  static_assert(sizeof(Peer) == 32);

  explicit ClockWatch(Options options) : options_(options) {}

  // A fresh authenticated frame from the peer whose state is `p`, stamped `sent_utc_ms`,
  // opened when our clocks read `now_utc_ms` / `now_mono_ms`.  Returns the bound when it
  // is above the warning threshold and no warning for this peer was due sooner: the
  // caller warns once.
  std::optional<int64_t> observe(Peer& p, int64_t sent_utc_ms, int64_t now_utc_ms, int64_t now_mono_ms) const;

  // At least how far the peer's clock is ahead of ours (negative: it may be behind, or
  // the link slow), from its frames of the last one to two windows; nullopt without any.
  std::optional<int64_t> ahead_at_least(const Peer& p, int64_t now_mono_ms) const;

  // At least how far the peer's clock is ahead of ours *now*, from its frames of the last
  // one to two seconds, for deciding that its clock has passed an instant (a prepared
  // run's clock check, schedule/scheduler.h).  When a frame left, its clock read S and our
  // monotonic clock at most R_mono, so now it reads at least S + (now_mono - R_mono) —
  // unless its clock stepped back since.  The largest such bound over those frames is
  // used, not the latest frame's: a frame that waited in a queue (ours, busy with a
  // burst, or the sender's) gives a bound looser by its wait, and a run held for the
  // check then waited as long (the last runs of `caesium-bench cluster` with
  // prepare_ahead: up to 170 ms).  A bound is kept for at most two seconds, so a step
  // back of the peer's clock misleads it for no longer.  Kept against our monotonic
  // clock, so a step of our own realtime clock does not inflate it, as it does the
  // windowed bound above (a node whose clock jumped 4.6 s ahead took every peer for 4.6 s
  // ahead too: swarm seed 4 with --prepare-ahead 5s ran work early).  nullopt without a
  // frame in one to two windows.
  std::optional<int64_t> ahead_now(const Peer& p, int64_t now_utc_ms, int64_t now_mono_ms) const;

 private:
  // Moves the buckets forward to the one holding `now_mono_ms`.
  void roll(Peer& p, int64_t now_mono_ms) const;

  Options options_;
};

}  // namespace caesium::node
