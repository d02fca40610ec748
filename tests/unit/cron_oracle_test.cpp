// CronExpr::next_after against the brute-force oracle in cron_oracle.h, over thousands of
// random expressions, in UTC and in zones with a fixed offset.  Seeded: a failure prints
// the seed, and CAESIUM_SEED=<n> replays it (CAESIUM_CRON_ROUNDS=<n> runs more rounds).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "base/rng.h"
#include "tests/unit/test_seed.h"
#include "base/time.h"
#include "schedule/cron.h"
#include "tests/unit/cron_oracle.h"

using caesium::Rng;
using caesium::format_rfc3339_utc;
using caesium::schedule::CronExpr;
using caesium::schedule::Zone;

namespace {

using caesium::test::seed_or;

int rounds_or(int fallback) {
  const char* s = std::getenv("CAESIUM_CRON_ROUNDS");
  return s != nullptr ? std::atoi(s) : fallback;
}

constexpr int64_t kHorizonDays = 3 * 366;

// A random instant in 1970..2100, sometimes on a minute boundary or just before one, so
// "strictly after" is exercised at the edges.
int64_t random_instant_ms(Rng& rng) {
  int64_t t = rng.between(0, 4'102'444'800LL) * 1000;  // up to 2100-01-01
  switch (rng.below(4)) {
    case 0: t = t / 60000 * 60000; break;           // exactly on a minute
    case 1: t = t / 60000 * 60000 - 1; break;       // 1 ms before a minute
    case 2: t += static_cast<int64_t>(rng.below(1000)); break;  // inside a second
    default: break;
  }
  return t;
}

// Checks a chain of next_after calls from `start_ms` against the oracle in `zone`, whose
// offset must be constant (offset_s) over the horizon.
void check_chain(const cron_oracle::Expr& oe, const CronExpr& expr, const Zone& zone, int32_t offset_s,
                 int64_t start_ms, int steps) {
  int64_t after_ms = start_ms;
  for (int i = 0; i < steps; ++i) {
    const int64_t after_s = (after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000));
    const auto want_local = cron_oracle::next_local(oe, after_s + 1 + offset_s, kHorizonDays);
    const auto got = expr.next_after(after_ms, zone);
    INFO("after " << format_rfc3339_utc(after_ms) << " (" << after_ms << " ms), step " << i);
    if (!want_local) {
      // Nothing within the horizon: next_after may still find something later.
      if (got) CHECK(*got / 1000 >= after_s + 1 + (kHorizonDays - 1) * 86400);
      return;
    }
    REQUIRE(got.has_value());
    CHECK(format_rfc3339_utc(*got) == format_rfc3339_utc((*want_local - offset_s) * 1000));
    CHECK(*got % 1000 == 0);
    CHECK(*got > after_ms);
    after_ms = *got;
  }
}

}  // namespace

TEST_CASE("random expressions agree with the brute-force oracle in UTC", "[cron][oracle]") {
  const uint64_t seed = seed_or(20260329);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  const int rounds = rounds_or(2000);
  int parsed = 0, never = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto oe = cron_oracle::random_expr(rng);
    INFO("expression \"" << oe.text << "\"");
    auto expr = CronExpr::parse(oe.text);
    if (!expr.ok()) {
      // The only acceptable rejection of a generated expression: it can never fire.
      INFO("error: " << expr.error().message);
      CHECK(expr.error().message.find("never fires") != std::string::npos);
      CHECK_FALSE(cron_oracle::any_day_in_cycle(oe));
      ++never;
      continue;
    }
    ++parsed;
    CHECK(expr->follows_real_time() == oe.wildcard);
    check_chain(oe, *expr, Zone::utc(), 0, random_instant_ms(rng), 4);
  }
  CHECK(parsed > rounds * 9 / 10);  // the generator mostly makes firing expressions
  INFO("never-firing expressions seen: " << never);
}

TEST_CASE("random expressions agree with the oracle in fixed-offset zones", "[cron][oracle]") {
  const uint64_t seed = seed_or(1957);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  struct FixedZone {
    const char* name;
    int32_t offset_s;
  };
  // Etc/GMT+5 is UTC-5 (POSIX sign); Kolkata and Kathmandu have not changed since 1986.
  const FixedZone zones[] = {{"Etc/GMT+5", -5 * 3600}, {"Etc/GMT-14", 14 * 3600},
                             {"Asia/Kolkata", 5 * 3600 + 1800}, {"Asia/Kathmandu", 5 * 3600 + 2700},
                             {"Etc/GMT+12", -12 * 3600}};
  const int rounds = rounds_or(1000);
  for (int r = 0; r < rounds; ++r) {
    const auto oe = cron_oracle::random_expr(rng);
    auto expr = CronExpr::parse(oe.text);
    if (!expr.ok()) continue;
    const auto& fz = zones[rng.below(std::size(zones))];
    auto zone = Zone::find(fz.name);
    REQUIRE(zone.ok());
    INFO("expression \"" << oe.text << "\" in " << fz.name);
    // 1990..2100: after Kathmandu's 1986 change, inside the zone tables.
    const int64_t start_ms = std::max<int64_t>(random_instant_ms(rng), 631'152'000'000);
    CHECK(zone->offset_at(start_ms / 1000) == fz.offset_s);
    check_chain(oe, *expr, *zone, fz.offset_s, start_ms, 3);
  }
}

TEST_CASE("the oracle agrees with matches_local on random instants", "[cron][oracle]") {
  const uint64_t seed = seed_or(77);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  for (int r = 0; r < 300; ++r) {
    const auto oe = cron_oracle::random_expr(rng);
    auto expr = CronExpr::parse(oe.text);
    if (!expr.ok()) continue;
    INFO("expression \"" << oe.text << "\"");
    for (int i = 0; i < 50; ++i) {
      const int64_t local_s = random_instant_ms(rng) / 1000;
      INFO("local " << format_rfc3339_utc(local_s * 1000));
      CHECK(expr->matches_local(local_s) == cron_oracle::matches(oe, local_s));
    }
  }
}
