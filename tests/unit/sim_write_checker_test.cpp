// Workload deletes and edits: the `op` and `w` keys of [[workload.entry]], and the rules
// delete.run_after_ack / edit.run_after_ack judged on hand-made records (each rule is
// shown to bite, and to spare what it must spare).
#include <catch2/catch.hpp>

#include <string>

#include "schedule/entry_json.h"
#include "sim/scenario.h"
#include "sim/write_checker.h"

using namespace caesium;
using namespace caesium::sim;

namespace {

const char* kCluster = R"(
[[node]]
id = "n1"
[[node]]
id = "n2"
[[node]]
id = "n3"
[[volume]]
name = "v1"
replicas = ["n1", "n2", "n3"]
)";

std::string error_of(const std::string& text) {
  auto r = parse_scenario(text, "t.toml");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

const int64_t kEpoch = 1767225600000;  // 2026-01-01T00:00:00Z

schedule::Entry entry(const std::string& cron, const char* semantics) {
  nlohmann::json j{{"cron", cron}, {"semantics", semantics}, {"handler", "noop"}};
  auto e = schedule::entry_from_json(j, "e", "x", kEpoch, "n1");
  REQUIRE(e.ok());
  return *e;
}

// An entry firing every 5 s, then a delete (or an edit to every 20 s) issued at 60 s and
// acknowledged by a majority at 61 s, and one run of the occurrence due at 65 s whose
// attempt was dispatched at `dispatched_ms` by an owner that could (or not) reach a majority.
WriteRules rules(const char* semantics, bool edit, int64_t dispatched_ms, bool owner_reaches_majority,
                 int64_t scheduled_s = 65) {
  WriteRules r;
  r.epoch_utc_ms = kEpoch;
  WriteRules::Key k;
  k.volume = "v1";
  k.key = "e/caesium/schedule/x";
  WriteRules::Version created;
  created.write_id = 1;
  created.issued_ms = 10'000;
  created.hlc.physical_ms = kEpoch + 10'000;
  created.acked_ms = 10'005;
  created.entry = entry("*/5 * * * * *", semantics);
  WriteRules::Version change;
  change.write_id = 2;
  change.issued_ms = 60'000;
  change.hlc.physical_ms = kEpoch + 60'000;
  change.acked_ms = 61'000;
  change.majority_acked = true;
  change.deleted = !edit;
  if (edit) change.entry = entry("*/20 * * * * *", semantics);
  k.versions = {created, change};
  const int64_t scheduled = kEpoch + scheduled_s * 1000;
  k.dispatches[scheduled].push_back({dispatched_ms, "n1", "n2", 1, owner_reaches_majority});
  k.runs.push_back({dispatched_ms + 3, "n2", "f1", 1, scheduled});
  r.keys.push_back(std::move(k));
  return r;
}

}  // namespace

TEST_CASE("workload: op and w parse, bad values name the key and line", "[sim]") {
  auto r = parse_scenario(std::string(kCluster) + R"(
[[workload.entry]]
at = "1s"
via = "n1"
volume = "v1"
entity = "e"
name = "x"
cron = "* * * * *"
w = 2
[[workload.entry]]
at = "2s"
via = "n2"
volume = "v1"
entity = "e"
name = "x"
op = "delete"
w = "majority"
)",
                          "t.toml");
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  REQUIRE(r->workload.size() == 2);
  CHECK_FALSE(r->workload[0].remove);
  CHECK(r->workload[0].want_acks == 2);
  CHECK_FALSE(r->workload[0].fields.contains("w"));
  CHECK(r->workload[1].remove);
  CHECK(r->workload[1].want_majority);
  CHECK(r->workload[1].fields.empty());

  const std::string item = std::string(kCluster) + "[[workload.entry]]\nat = \"1s\"\nvia = \"n1\"\nvolume = \"v1\"\n"
                                                   "entity = \"e\"\nname = \"x\"\n";
  std::string e = error_of(item + "op = \"remove\"\n");
  CHECK(e.find("t.toml:17:") != std::string::npos);
  CHECK(e.find("workload.entry[0].op") != std::string::npos);
  e = error_of(item + "op = \"delete\"\ncron = \"* * * * *\"\n");
  CHECK(e.find("workload.entry[0].cron") != std::string::npos);
  CHECK(e.find("takes no entry fields") != std::string::npos);
  e = error_of(item + "w = \"all\"\n");
  CHECK(e.find("workload.entry[0].w") != std::string::npos);
  e = error_of(item + "w = 0\n");
  CHECK(e.find("workload.entry[0].w") != std::string::npos);
  e = error_of(item + "w = 4\n");
  CHECK(e.find("workload.entry.w") != std::string::npos);
  CHECK(e.find("3 replicas") != std::string::npos);
}

TEST_CASE("delete.run_after_ack bites on a run dispatched after the acknowledgement", "[sim]") {
  // At-most-once: always.
  auto v = judge_writes(rules("at_most_once", false, 64'000, false));
  REQUIRE(v.size() == 1);
  CHECK(v[0].invariant == "delete.run_after_ack");
  CHECK(v[0].detail.find("write 2") != std::string::npos);
  // At-least-once: only when the owner could reach a majority.
  CHECK(judge_writes(rules("at_least_once", false, 64'000, true)).size() == 1);
  CHECK(judge_writes(rules("at_least_once", false, 64'000, false)).empty());
  // Dispatched before the acknowledgement: that run may go on.
  CHECK(judge_writes(rules("at_most_once", false, 60'500, true)).empty());
  // A delete acknowledged by fewer than a majority promises nothing.
  auto weak = rules("at_most_once", false, 64'000, true);
  weak.keys[0].versions[1].majority_acked = false;
  CHECK(judge_writes(weak).empty());
  // Neither does one never acknowledged.
  auto never = rules("at_most_once", false, 64'000, true);
  never.keys[0].versions[1].acked_ms = -1;
  CHECK(judge_writes(never).empty());
  // A later write of the key (a re-create) ends the rule.
  auto again = rules("at_most_once", false, 64'000, true);
  WriteRules::Version recreate = again.keys[0].versions[0];
  recreate.write_id = 3;
  recreate.issued_ms = 62'000;
  again.keys[0].versions.push_back(recreate);
  CHECK(judge_writes(again).empty());
}

TEST_CASE("edit.run_after_ack bites on an occurrence the new definition dropped", "[sim]") {
  // Due at 65 s: every 5 s had it, every 20 s has not.
  auto v = judge_writes(rules("at_most_once", true, 64'000, false, 65));
  REQUIRE(v.size() == 1);
  CHECK(v[0].invariant == "edit.run_after_ack");
  // Due at 80 s: the new definition schedules it too.
  CHECK(judge_writes(rules("at_most_once", true, 79'000, false, 80)).empty());
  // Due before the edit was issued (55 s): not the edit's business.
  CHECK(judge_writes(rules("at_most_once", true, 64'000, false, 55)).empty());
  // At-least-once from an owner cut off from the majority: allowed, flagged.
  CHECK(judge_writes(rules("at_least_once", true, 64'000, false, 65)).empty());
  CHECK(judge_writes(rules("at_least_once", true, 64'000, true, 65)).size() == 1);
  // "Due after the edit" is by the edit's version (the taking node's clock), not by ground
  // truth: taken on a clock 6 s ahead, the edit is stamped 66 s, and the occurrence due at
  // 65 s was due before it — it may run.
  auto ahead = rules("at_most_once", true, 64'000, false, 65);
  ahead.keys[0].versions[1].hlc.physical_ms = kEpoch + 66'000;
  CHECK(judge_writes(ahead).empty());
  // On a clock behind, stamped 58 s: the occurrence due at 55 s is still before it, 65 s not.
  auto behind = rules("at_most_once", true, 64'000, false, 65);
  behind.keys[0].versions[1].hlc.physical_ms = kEpoch + 58'000;
  CHECK(judge_writes(behind).size() == 1);
}

// Preparing ahead: an attempt dispatched before the acknowledgement but held for its
// instant must not start after an acknowledgement that came before that instant.
TEST_CASE("delete.prepared_run bites on a prepared run started after an acknowledgement before its instant", "[sim]") {
  auto prepared = [](const char* semantics, bool edit, int64_t start_ms, bool reaches = true) {
    auto r = rules(semantics, edit, 60'500, reaches);
    r.keys[0].runs[0].start_ms = start_ms;
    return r;
  };
  // Due at 65 s, acknowledged at 61 s, started at 65 s: the delete should have stopped it.
  auto v = judge_writes(prepared("at_most_once", false, 65'000));
  REQUIRE(v.size() == 1);
  CHECK(v[0].invariant == "delete.prepared_run");
  CHECK(v[0].detail.find("write 2") != std::string::npos);
  // An edit that no longer schedules it (every 20 s: 65 s is not one), likewise.
  v = judge_writes(prepared("at_most_once", true, 65'000));
  REQUIRE(v.size() == 1);
  CHECK(v[0].invariant == "edit.prepared_run");
  // At-least-once: only when the owner reached a majority when it dispatched.
  CHECK(judge_writes(prepared("at_least_once", false, 65'000, true)).size() == 1);
  CHECK(judge_writes(prepared("at_least_once", false, 65'000, false)).empty());
  // Started before the acknowledgement: it went on.
  CHECK(judge_writes(prepared("at_most_once", false, 60'900)).empty());
  // Acknowledged after the instant (the change waited for it): the run may go on.
  auto late = prepared("at_most_once", false, 65'000);
  late.keys[0].versions[1].acked_ms = 65'500;
  CHECK(judge_writes(late).empty());
  // An edit that still schedules it is not judged (the owner runs it under the new one).
  auto keeps = prepared("at_most_once", true, 60'000 + 20'000);
  keeps.keys[0].runs[0].scheduled_utc_ms = kEpoch + 80'000;
  keeps.keys[0].dispatches[kEpoch + 80'000] = keeps.keys[0].dispatches.begin()->second;
  CHECK(judge_writes(keeps).empty());
}
