// Hybrid logical clock: monotonic under any local clock, causal across nodes, bounded drift.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "schedule/hlc.h"

using caesium::Rng;
using caesium::schedule::Hlc;
using caesium::schedule::hlc_successor;
using caesium::schedule::HlcTime;
using caesium::schedule::Version;

namespace {

uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("CAESIUM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

}  // namespace

TEST_CASE("versions order by physical, logical, then origin", "[hlc]") {
  const Version a{100, 0, "n1"}, b{100, 1, "n0"}, c{101, 0, "n0"}, d{100, 0, "n2"};
  CHECK(a < b);
  CHECK(b < c);
  CHECK(a < d);
  CHECK(a == Version{100, 0, "n1"});
  CHECK_FALSE(a == d);
}

TEST_CASE("tick is strictly increasing even when the clock goes backwards", "[hlc]") {
  const uint64_t seed = seed_or(11);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  Hlc clock("n1");
  int64_t now = 1'700'000'000'000;
  Version prev = clock.tick(now);
  for (int i = 0; i < 20'000; ++i) {
    // Mostly forwards, sometimes stuck, sometimes a jump back of up to a minute.
    const uint64_t r = rng.below(10);
    if (r < 6) now += rng.between(0, 5);
    else if (r < 9) now -= rng.between(0, 60'000);
    const Version v = clock.tick(now);
    REQUIRE(prev < v);
    REQUIRE(v.physical_ms >= now);  // never behind the local clock
    REQUIRE(v.origin == "n1");
    prev = v;
  }
}

TEST_CASE("tick restarts the logical counter when real time moves on", "[hlc]") {
  Hlc clock("n1");
  CHECK(clock.tick(1000) == Version{1000, 0, "n1"});
  CHECK(clock.tick(1000) == Version{1000, 1, "n1"});
  CHECK(clock.tick(999) == Version{1000, 2, "n1"});
  CHECK(clock.tick(1001) == Version{1001, 0, "n1"});
}

TEST_CASE("a version made after observing another is greater than it", "[hlc]") {
  const uint64_t seed = seed_or(12);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  std::vector<Hlc> clocks{Hlc("a"), Hlc("b"), Hlc("c")};
  // Each node's realtime clock has its own skew (within the drift bound).
  const std::vector<int64_t> skew{0, 20'000, -30'000};
  int64_t now = 1'000'000;
  std::vector<Version> last(3, Version{});
  for (int i = 0; i < 10'000; ++i) {
    now += rng.between(0, 3);
    const size_t from = rng.below(3), to = rng.below(3);
    const Version sent = clocks[from].tick(now + skew[from]);
    REQUIRE(clocks[to].observe(sent, now + skew[to]));
    const Version next = clocks[to].tick(now + skew[to]);
    REQUIRE(sent < next);
    REQUIRE(last[to] < next);
    last[to] = next;
  }
}

TEST_CASE("a remote version beyond the drift bound does not move the clock", "[hlc]") {
  Hlc clock("n1", Hlc::Options{60'000});
  const Version local = clock.tick(1'000'000);
  CHECK_FALSE(clock.observe(Version{1'000'000 + 60'001, 0, "rogue"}, 1'000'000));
  CHECK(clock.clamped_observations() == 1);
  const Version next = clock.tick(1'000'000);
  CHECK(next.physical_ms == 1'000'000);
  CHECK(local < next);
  // At the bound it is accepted.
  CHECK(clock.observe(Version{1'000'000 + 60'000, 7, "near"}, 1'000'000));
  CHECK(clock.tick(1'000'000) == Version{1'060'000, 8, "n1"});
  // Extreme inputs do not overflow.
  CHECK_FALSE(clock.observe(Version{std::numeric_limits<int64_t>::max(), 0, "x"}, 1'000'000));
  CHECK(clock.observe(Version{std::numeric_limits<int64_t>::min(), 0, "x"}, 1'000'000));
}

TEST_CASE("logical overflow carries into the physical part", "[hlc]") {
  const HlcTime t{5, std::numeric_limits<uint32_t>::max()};
  CHECK(hlc_successor(t) == HlcTime{6, 0});
  CHECK(hlc_successor(HlcTime{5, 3}) == HlcTime{5, 4});
  Hlc clock("n1");
  REQUIRE(clock.observe(Version{5, std::numeric_limits<uint32_t>::max(), "x"}, 5));
  CHECK(clock.tick(5) == Version{6, 0, "n1"});
}
