// Entries: keys, identifiers and field-by-field validation.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "schedule/entry.h"
#include "schedule/occurrence.h"

using namespace caesium::schedule;

namespace {

Entry valid_entry() {
  Entry e;
  e.entity = "billing";
  e.name = "nightly-report";
  e.timing = CronTiming::make("30 2 * * *", "Europe/London").value();
  e.handler = "report";
  e.created_utc_ms = 1'767'225'600'000;
  return e;
}

}  // namespace

TEST_CASE("entry keys round trip and reject non-schedule keys", "[entry]") {
  CHECK(entry_key("billing", "nightly-report") == "billing/caesium/schedule/nightly-report");
  CHECK(entry_key(valid_entry()) == "billing/caesium/schedule/nightly-report");
  auto k = parse_entry_key("billing/caesium/schedule/nightly-report");
  REQUIRE(k.ok());
  CHECK(k->entity == "billing");
  CHECK(k->name == "nightly-report");
  CHECK(is_entry_key("a/caesium/schedule/b"));
  CHECK_FALSE(is_entry_key("a/caesium/schedule/"));
  CHECK_FALSE(is_entry_key("/caesium/schedule/b"));
  CHECK_FALSE(is_entry_key("a/caesium/state/b"));
  CHECK(parse_entry_key("a/caesium/state/b").error().field == "key");
  CHECK(parse_entry_key("a/caesium/schedule/b/c").error().field == "name");  // '/' is not allowed in names
  CHECK(parse_entry_key("a b/caesium/schedule/c").error().field == "entity");
  // The view split accepts exactly what parse_entry_key accepts.
  for (const char* key : {"billing/caesium/schedule/nightly-report", "a/caesium/state/b", "a/caesium/schedule/b/c",
                          "a b/caesium/schedule/c", "/caesium/schedule/b", "a/caesium/schedule/", "plain"}) {
    CAPTURE(key);
    auto parsed = parse_entry_key(key);
    auto split = split_entry_key(key);
    REQUIRE(split.has_value() == parsed.ok());
    if (split) {
      CHECK(split->entity == parsed->entity);
      CHECK(split->name == parsed->name);
    }
  }
}

TEST_CASE("identifiers use a safe charset and length", "[entry]") {
  CHECK(validate_identifier("node-1.eu_west:a@b", "x").ok());
  CHECK(validate_identifier(std::string(200, 'a'), "x").ok());
  CHECK(validate_identifier(std::string(201, 'a'), "x").error().message ==
        "x: is 201 bytes; at most 200 are allowed");
  CHECK(validate_identifier("", "x").error().message == "x: must not be empty");
  CHECK(validate_identifier("..", "x").error().message == "x: must not be \".\" or \"..\"");
  CHECK(validate_identifier("a/b", "x").error().message ==
        "x: character 2 is not allowed; use letters, digits and . _ : @ -");
  CHECK_FALSE(validate_identifier("caf\xc3\xa9", "x").ok());
}

TEST_CASE("is_identifier agrees with validate_identifier", "[entry]") {
  const std::vector<std::string> values{
      "node-1.eu_west:a@b", "", ".", "..", "...", "a/b", "a b", "caf\xc3\xa9", "x",
      std::string(200, 'a'), std::string(201, 'a'), std::string("a\0b", 3)};
  for (const std::string& v : values) {
    CAPTURE(v);
    CHECK(is_identifier(v) == validate_identifier(v, "x").ok());
  }
}

TEST_CASE("occurrence record keys name entity, name, instant and writer, and parse back", "[entry]") {
  const OccurrenceId occ{"billing/caesium/schedule/nightly-report", 1'767'225'600'000};
  CHECK(occ_prefix(occ) == "~occ/billing/nightly-report/8000019b76daa800/");
  CHECK(owner_record_key(occ, "n1") == "~occ/billing/nightly-report/8000019b76daa800/m/n1");
  CHECK(worker_record_key(occ, "0123456789abcdef") ==
        "~occ/billing/nightly-report/8000019b76daa800/w/0123456789abcdef");
  CHECK(grant_key("main", occ) == "g/main/billing/nightly-report/8000019b76daa800");
  auto parsed = parse_occ_key(worker_record_key(occ, "0123456789abcdef"));
  REQUIRE(parsed);
  CHECK(parsed->occ == occ);
  CHECK(parsed->kind == ParsedOccKey::Kind::kWorker);
  CHECK(parsed->suffix == "0123456789abcdef");
  auto grant = parse_grant_key(grant_key("main", occ));
  REQUIRE(grant);
  CHECK(grant->volume == "main");
  CHECK(grant->occ == occ);
  // Instants before 1970 still sort in time order (biased hex).
  CHECK(occ_prefix(OccurrenceId{occ.entry_key, -1}) < occ_prefix(OccurrenceId{occ.entry_key, 0}));
  // Not a schedule key (callers never pass one): kept whole rather than crashing.
  CHECK(occ_prefix(OccurrenceId{"a b/caesium/schedule/c", 0}) == "~occ/a b/caesium/schedule/c/8000000000000000/");
  CHECK(occ_prefix(OccurrenceId{"plain", 0}) == "~occ/plain/8000000000000000/");
}

TEST_CASE("validate accepts a complete entry and names each bad field", "[entry]") {
  REQUIRE(validate(valid_entry()).ok());
  struct Case {
    const char* field;
    std::function<void(Entry&)> mutate;
  };
  const Case cases[] = {
      {"entity", [](Entry& e) { e.entity = ""; }},
      {"name", [](Entry& e) { e.name = "a/b"; }},
      {"handler", [](Entry& e) { e.handler = ""; }},
      {"cron", [](Entry& e) { std::get<CronTiming>(e.timing).text = "0 3 * * *"; }},  // not recompiled
      {"tz", [](Entry& e) { std::get<CronTiming>(e.timing).tz = "UTC"; }},
      {"jitter", [](Entry& e) { e.jitter_ms = -1; }},
      {"semantics", [](Entry& e) { e.semantics = static_cast<Semantics>(7); }},
      {"bind[1]", [](Entry& e) { e.bind = {"n1", "n 2"}; }},
      {"bind[1]", [](Entry& e) { e.bind = {"n1", "tag:"}; }},
      {"bind[2]", [](Entry& e) { e.bind = {"n1", "tag:eu", "n1"}; }},
      {"bind", [](Entry& e) { e.bind.assign(65, "n"); }},
      {"prefer_origin", [](Entry& e) { e.prefer_origin = true; }},
      {"origin", [](Entry& e) { e.origin = "node 1"; }},
      {"created", [](Entry& e) { e.created_utc_ms = kCronMaxUtcMs + 1; }},
      {"accept_timeout", [](Entry& e) { e.accept_timeout_ms = 0; }},
      {"complete_time", [](Entry& e) { e.complete_time_ms = -1; }},
      {"misfire_window", [](Entry& e) { e.misfire_window_ms = kMaxEntryDurationMs + 1; }},
      {"misfire", [](Entry& e) { e.misfire = static_cast<MisfirePolicy>(9); }},
      {"payload", [](Entry& e) { e.payload.assign(kMaxPayloadBytes + 1, 'x'); }},
      {"timer.repeat_for", [](Entry& e) {
         Timer t;
         t.kind = TimerKind::interval;
         t.interval_ms = 10'000;
         t.repeat_for_ms = 5'000;
         e.timing = t;
       }},
  };
  for (const auto& c : cases) {
    INFO("field " << c.field);
    Entry e = valid_entry();
    c.mutate(e);
    const auto s = validate(e);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().field == c.field);
    CHECK(s.error().message.rfind(std::string(c.field) + ": ", 0) == 0);
  }
}

TEST_CASE("validate accepts the edges of every range", "[entry]") {
  Entry e = valid_entry();
  e.payload.assign(kMaxPayloadBytes, '\0');
  e.bind = {"n1", "tag:eu-west", "tag:gpu"};
  e.origin = "n1";
  e.prefer_origin = true;
  e.complete_time_ms = 0;
  e.misfire_window_ms = 0;
  e.accept_timeout_ms = 1;
  e.jitter_ms = kMaxJitterMs;
  e.semantics = Semantics::at_most_once;
  e.misfire = MisfirePolicy::fire_all;
  CHECK(validate(e).ok());
  CHECK(to_string(Semantics::at_most_once) == "at_most_once");
  CHECK(to_string(MisfirePolicy::skip) == "skip");
}
