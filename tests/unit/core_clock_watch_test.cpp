// ClockWatch (node/core/clock_watch.h): the windowed lower bound of a peer's clock lead,
// its warnings, and the bound "now" that prepared runs rely on.
#include <catch2/catch.hpp>

#include "node/core/clock_watch.h"

using caesium::node::ClockWatch;

namespace {
constexpr int64_t kUtc = 1'800'000'000'000;  // our realtime clock at mono 0
}

TEST_CASE("core clock watch: the windowed bound is the largest S - R of one to two windows") {
  ClockWatch w(ClockWatch::Options{});
  ClockWatch::Peer p;
  CHECK_FALSE(w.ahead_at_least(p, 1'000).has_value());
  // Frames sent by a clock 300 ms ahead, 5 ms and 40 ms in flight.
  w.observe(p, kUtc + 1'000 + 300 - 40, kUtc + 1'000, 1'000);
  w.observe(p, kUtc + 2'000 + 300 - 5, kUtc + 2'000, 2'000);
  CHECK(w.ahead_at_least(p, 2'000) == 295);
  // Two windows without a frame: nothing is known any more.
  CHECK_FALSE(w.ahead_at_least(p, 2'000 + 31'000).has_value());
}

TEST_CASE("core clock watch: warns once per warn_every while a peer runs beyond twice the skew") {
  ClockWatch::Options o;
  o.warn_above_ms = 2'000;
  o.warn_every_ms = 60'000;
  ClockWatch w(o);
  ClockWatch::Peer p;
  CHECK(w.observe(p, kUtc + 1'000 + 2'500, kUtc + 1'000, 1'000) == 2'500);
  CHECK_FALSE(w.observe(p, kUtc + 2'000 + 2'500, kUtc + 2'000, 2'000).has_value());
  CHECK(w.observe(p, kUtc + 62'000 + 2'500, kUtc + 62'000, 62'000).has_value());
  ClockWatch::Peer q;
  CHECK_FALSE(w.observe(q, kUtc + 1'000 + 1'999, kUtc + 1'000, 1'000).has_value());
}

TEST_CASE("core clock watch: the bound now keeps the best recent frame and ignores steps of our own clock") {
  ClockWatch w(ClockWatch::Options{});
  ClockWatch::Peer p;
  CHECK_FALSE(w.ahead_now(p, kUtc + 1'000, 1'000).has_value());
  // Synchronized clocks, 2 ms in flight: the peer is at least 2 ms behind, as far as we know.
  w.observe(p, kUtc + 1'000 - 2, kUtc + 1'000, 1'000);
  CHECK(w.ahead_now(p, kUtc + 1'000, 1'000) == -2);
  // 500 ms later with no new frame: still -2 (both clocks moved on together).
  CHECK(w.ahead_now(p, kUtc + 1'500, 1'500) == -2);
  // A frame that waited 150 ms in a queue says the peer is at least 152 ms behind, which
  // the frame before already beat: the bound stays.
  w.observe(p, kUtc + 1'600 - 152, kUtc + 1'600, 1'600);
  CHECK(w.ahead_now(p, kUtc + 1'600, 1'600) == -2);
  // Our realtime clock jumps 4.6 s ahead (the monotonic one does not).  The windowed
  // bound still holds the frame from before the jump, which no longer says anything; the
  // bound now knows the peer is 4.6 s behind.
  const int64_t jump = 4'600;
  CHECK(w.ahead_at_least(p, 1'700) == -2);
  CHECK(w.ahead_now(p, kUtc + 1'700 + jump, 1'700) == -2 - jump);
  // The peer's clock steps back 3 s.  A bound is kept for one to two seconds, so the
  // frame showing the step counts once the best one is a second old.
  w.observe(p, kUtc + 1'900 - 3'000, kUtc + 1'900 + jump, 1'900);
  CHECK(w.ahead_now(p, kUtc + 1'900 + jump, 1'900) == -2 - jump);
  w.observe(p, kUtc + 2'000 - 3'000, kUtc + 2'000 + jump, 2'000);
  CHECK(w.ahead_now(p, kUtc + 2'000 + jump, 2'000) == -3'000 - jump);
  CHECK(w.ahead_at_least(p, 2'000) == -2);  // the windowed bound keeps the best of the window
  // A better frame replaces it at once.
  w.observe(p, kUtc + 2'100 + jump - 1, kUtc + 2'100 + jump, 2'100);
  CHECK(w.ahead_now(p, kUtc + 2'100 + jump, 2'100) == -1);
  // Nothing recent: unknown.
  CHECK_FALSE(w.ahead_now(p, kUtc + 40'000, 40'000).has_value());
  // After a silence the first frame counts alone, whatever the bound before it.
  w.observe(p, kUtc + 40'000 - 7'000, kUtc + 40'000, 40'000);
  CHECK(w.ahead_now(p, kUtc + 40'000, 40'000) == -7'000);
}
