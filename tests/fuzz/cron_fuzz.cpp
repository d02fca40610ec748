// libFuzzer target: the cron parser and search.
//
// Input: an expression (all bytes).  A parse either fails with a message naming a field
// and a column, or succeeds; then next_after is called from three start instants derived
// from a hash of the input, in UTC and in two DST zones, chaining three calls each, and
// these invariants are checked:
//   - the result is strictly after the start and a whole second;
//   - in UTC the result's wall time matches the fields (@every: lies on the anchor grid);
//   - in a DST zone the result's wall time matches, or the result is the end of a gap
//     whose skipped wall times contain a match (fixed-time jobs only);
//   - in UTC, when the result is within two hours of the start, no earlier second
//     (minute, for 5 fields) in between matches — a slow check of "first".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/hash.h"
#include "schedule/cron.h"
#include "schedule/zone.h"

namespace {

using caesium::schedule::CronExpr;
using caesium::schedule::LocalMapping;
using caesium::schedule::Zone;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "cron_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0); }

// Does the result at `utc_s` satisfy the expression in `zone` (DST rule included)?
bool explains(const CronExpr& e, const Zone& zone, int64_t utc_s) {
  const int64_t local = utc_s + zone.offset_at(utc_s);
  if (e.matches_local(local)) return true;
  if (e.follows_real_time()) return false;
  // A fixed-time job may run at the end of a gap for a skipped wall time.
  for (const auto& t : zone.transitions()) {
    if (t.utc_s != utc_s || t.offset_after_s <= t.offset_before_s) continue;
    for (int64_t l = t.utc_s + t.offset_before_s; l < t.utc_s + t.offset_after_s; ++l) {
      if (e.matches_local(l)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = CronExpr::parse(text);
  if (!parsed.ok()) {
    const auto& err = parsed.error();
    check(!err.message.empty() && !err.field.empty(), "error without message or field");
    check(err.message.find(" at column ") != std::string::npos, "error without a column");
    return 0;
  }
  const CronExpr& e = *parsed;
  static const Zone zones[] = {Zone::utc(), Zone::find("America/New_York").value(),
                               Zone::find("Australia/Lord_Howe").value()};
  const uint64_t h = caesium::hash64(text);
  const int64_t anchor_ms = static_cast<int64_t>(h % 4'000'000'000'000ULL);
  for (int s = 0; s < 3; ++s) {
    // Starts in 1970..2096, some on exact seconds.
    int64_t start = static_cast<int64_t>(caesium::hash_combine(h, static_cast<uint64_t>(s)) % 4'000'000'000'000ULL);
    if (s == 1) start -= start % 60'000;
    for (size_t zi = 0; zi < 3; ++zi) {
      const Zone& zone = zones[zi];
      int64_t after = start;
      for (int step = 0; step < 3; ++step) {
        const auto next = e.next_after(after, zone, anchor_ms);
        if (!next) break;
        check(*next > after, "result not after the start");
        check(*next % 1000 == 0, "result not a whole second");
        const int64_t utc_s = *next / 1000;
        if (e.every_ms() > 0) {
          check((utc_s - floor_div(anchor_ms, 1000)) % (e.every_ms() / 1000) == 0, "@every off its grid");
        } else {
          check(explains(e, zone, utc_s), "result does not match the expression");
        }
        if (zi == 0 && e.every_ms() == 0 && *next - after <= 2 * 3'600'000) {
          const int64_t stride = e.has_seconds_field() ? 1 : 60;
          for (int64_t t = (floor_div(after, 1000) + 1 + stride - 1) / stride * stride; t < utc_s; t += stride) {
            check(!e.matches_local(t), "an earlier instant matches");
          }
        }
        after = *next;
      }
    }
  }
  return 0;
}
