// H in entries: the key that H hashes is the entry's own (entity, name), through every
// way an entry is built — the JSON of the API and of static [[entry]] configs, the binary
// encoding every replica decodes — and an expression compiled for another key is refused.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "schedule/entry.h"
#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"

using caesium::format_rfc3339_utc;
using caesium::parse_rfc3339_ms;
using nlohmann::json;
using namespace caesium::schedule;

namespace {

constexpr int64_t kCreated = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

Entry from_json(const json& j, const std::string& entity, const std::string& name) {
  auto e = entry_from_json(j, entity, name, kCreated, "n1");
  INFO(entity << "/" << name << ": " << (e.ok() ? "" : e.error().message));
  REQUIRE(e.ok());
  return *e;
}

std::string next_of(const Entry& e) { return format_rfc3339_utc(next_occurrence(e, kCreated).value()); }

}  // namespace

TEST_CASE("an H entry fires at times from its own key, the same after every decode", "[entry][hash]") {
  const json body = {{"cron", "H H * * *"}, {"tz", "Europe/London"}, {"handler", "report"}};
  const Entry a = from_json(body, "acme", "report");
  // The key is entry_key(entity, name): the same time as the expression parsed with it.
  const auto direct = CronExpr::parse("H H * * *", "acme/caesium/schedule/report").value();
  CHECK(next_occurrence(a, kCreated) == direct.next_after(kCreated, Zone::find("Europe/London").value()));
  CHECK(next_of(a) == "2026-01-01T07:54:00Z");  // pinned: see cron_hash_test
  // Every replica decodes the stored bytes and computes the same instants.
  const std::string bytes = encode_entry(a);
  for (int replica = 0; replica < 3; ++replica) {
    const auto decoded = decode_entry(bytes);
    REQUIRE(decoded.ok());
    CHECK(*decoded == a);
    int64_t t = kCreated, u = kCreated;
    for (int k = 0; k < 5; ++k) {
      t = next_occurrence(a, t).value();
      u = next_occurrence(*decoded, u).value();
      CHECK(t == u);
    }
  }
  // GET-then-PUT keeps the text and so the times.
  CHECK(next_of(from_json(entry_to_json(a), "acme", "report")) == next_of(a));
  // Other entries with the same text spread out: 40 names give many different times.
  std::set<std::string> times;
  for (int i = 0; i < 40; ++i) times.insert(next_of(from_json(body, "acme", "report-" + std::to_string(i))));
  CHECK(times.size() > 30);
  // The entity is part of the key too.
  CHECK(next_of(from_json(body, "other", "report")) != next_of(a));
}

TEST_CASE("an entry refuses an H expression compiled for another entry's key", "[entry][hash]") {
  Entry a = from_json({{"cron", "H H * * *"}, {"handler", "report"}}, "acme", "report");
  REQUIRE(validate(a).ok());
  Entry copy = a;
  copy.name = "report-copy";  // the timing still carries acme/report's values
  const caesium::Status s = validate(copy);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().field == "cron");
  CHECK(s.error().message ==
        "cron: the expression's H was compiled for another entry's key (use CronTiming::make with this entry's key)");
  copy.timing = CronTiming::make("H H * * *", "UTC", entry_key(copy)).value();
  CHECK(validate(copy).ok());
  // Without H an expression does not depend on the key, so a copy is fine.
  Entry plain = from_json({{"cron", "0 9 * * *"}, {"handler", "report"}}, "acme", "report");
  plain.name = "elsewhere";
  CHECK(validate(plain).ok());
}

TEST_CASE("H errors in entries name the cron field, no key, no H", "[entry][hash]") {
  auto bad = entry_from_json({{"cron", "0 0 HW * *"}, {"handler", "h"}}, "acme", "report", kCreated, "n1");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "cron");
  CHECK(bad.error().message ==
        "cron: day-of-month at column 6: 'H' cannot be combined with 'L', 'W' or '#' ('HW'); give H alone, or a "
        "number with the suffix");
  // CronTiming::make without a key refuses H and says why.
  auto keyless = CronTiming::make("H * * * *", "UTC");
  REQUIRE_FALSE(keyless.ok());
  CHECK(keyless.error().field == "cron");
  CHECK(keyless.error().message.rfind("cron: minute at column 1: 'H' picks its value by hashing the entry's key", 0) ==
        0);
  CHECK(CronTiming::make("H * * * *", "UTC", "acme/caesium/schedule/report").ok());
  // A bad zone is still reported as the zone.
  CHECK(CronTiming::make("H * * * *", "Nowhere/Special", "acme/caesium/schedule/report").error().field == "tz");
}
