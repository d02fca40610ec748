// Notifications (node/core/notify.h): which fire events call for one, and the entry that
// carries it — the same one whoever notices the event, so that the stores merge the
// copies into one entry with one occurrence.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "node/core/notify.h"
#include "schedule/entry_codec.h"
#include "schedule/timing.h"

using namespace caesium;
using namespace caesium::node;
using schedule::FireEvent;

namespace {

constexpr int64_t kDue = 1767225600000;  // 2026-01-01T00:00:00Z

FireEvent event(FireEvent::Kind kind, bool ok = true, uint32_t run = 1) {
  FireEvent e;
  e.kind = kind;
  e.volume = "v";
  e.occ = schedule::OccurrenceId{schedule::entry_key("billing", "invoice"), kDue};
  e.ok = ok;
  e.run = run;
  e.at_most_once = true;
  e.detail = "exit status 3";
  return e;
}

schedule::Entry subject(uint32_t attempts, std::string on_failure) {
  schedule::Entry e;
  e.entity = "billing";
  e.name = "invoice";
  e.handler = "run";
  e.retry.attempts = attempts;
  e.on_failure = std::move(on_failure);
  return e;
}

NotifyOptions cluster(std::string handler) {
  NotifyOptions o;
  o.handler = std::move(handler);
  return o;
}

std::vector<NotifyEvent> kinds(const std::vector<Notice>& v) {
  std::vector<NotifyEvent> out;
  for (const auto& n : v) out.push_back(n.event);
  return out;
}

}  // namespace

TEST_CASE("notify: a failed last run calls for on_failure and the cluster's failed notice", "[notify]") {
  const auto s = subject(1, "page-me");
  auto v = notices_for(event(FireEvent::Kind::kCompleted, false), &s, cluster("ops"), "n2");
  REQUIRE(kinds(v) == std::vector<NotifyEvent>{NotifyEvent::kOnFailure, NotifyEvent::kFailed});
  CHECK(v[0].handler == "page-me");
  CHECK(v[1].handler == "ops");
  CHECK(v[0].instant_utc_ms == kDue);  // not the worker's clock: a duplicate run's worker names the same
  CHECK(v[0].node == "n2");
  // No cluster handler: on_failure only.  No on_failure either: nothing.
  CHECK(kinds(notices_for(event(FireEvent::Kind::kCompleted, false), &s, NotifyOptions{}, "n2")) ==
        std::vector<NotifyEvent>{NotifyEvent::kOnFailure});
  const auto bare = subject(1, "");
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, false), &bare, NotifyOptions{}, "n2").empty());
  // The cluster's event list is honoured.
  NotifyOptions no_failed = cluster("ops");
  no_failed.failed = false;
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, false), &bare, no_failed, "n2").empty());
}

TEST_CASE("notify: runs that succeed, are replaced, or are followed by a retry call for nothing", "[notify]") {
  const auto retries = subject(3, "page-me");
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, true), &retries, cluster("ops"), "n2").empty());
  FireEvent replaced = event(FireEvent::Kind::kCompleted, false);
  replaced.replaced = true;
  CHECK(notices_for(replaced, &retries, cluster("ops"), "n2").empty());
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, false, 1), &retries, cluster("ops"), "n2").empty());
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, false, 2), &retries, cluster("ops"), "n2").empty());
  CHECK(notices_for(event(FireEvent::Kind::kCompleted, false, 3), &retries, cluster("ops"), "n2").size() == 2);
  // The entry is gone and the event does not say how many runs there may be (an older
  // sender): the cluster still hears of the failure.
  CHECK(kinds(notices_for(event(FireEvent::Kind::kCompleted, false, 1), nullptr, cluster("ops"), "n2")) ==
        std::vector<NotifyEvent>{NotifyEvent::kFailed});
  // Other events call for nothing.
  for (auto k : {FireEvent::Kind::kDue, FireEvent::Kind::kOwned, FireEvent::Kind::kDispatched,
                 FireEvent::Kind::kSkipped, FireEvent::Kind::kSkippedOverlap, FireEvent::Kind::kWithheld}) {
    CHECK(notices_for(event(k), &retries, cluster("ops"), "n2").empty());
  }
}

TEST_CASE("notify: missed and lost name the occurrence's instant, whoever notices them", "[notify]") {
  for (auto [k, want] : {std::pair{FireEvent::Kind::kMissed, NotifyEvent::kMissed},
                         std::pair{FireEvent::Kind::kLost, NotifyEvent::kLost}}) {
    auto a = notices_for(event(k), nullptr, cluster("ops"), "n1");
    auto b = notices_for(event(k), nullptr, cluster("ops"), "n3");
    REQUIRE(kinds(a) == std::vector<NotifyEvent>{want});
    REQUIRE(kinds(b) == std::vector<NotifyEvent>{want});
    CHECK(a[0].instant_utc_ms == kDue);
    CHECK(b[0].instant_utc_ms == kDue);
    // Two nodes, two clocks, two reasons: one entry, one occurrence.
    b[0].detail = "another reason";
    const auto ea = notification_entry(a[0], "n1", 12 * 3'600'000);
    const auto eb = notification_entry(b[0], "n3", 12 * 3'600'000);
    CHECK(schedule::entry_key(ea) == schedule::entry_key(eb));
    CHECK(ea.timing == eb.timing);
    CHECK(ea.created_utc_ms == eb.created_utc_ms);
    CHECK(schedule::next_scheduled_occurrence(ea, kDue - 1) == kDue);
    CHECK(schedule::next_scheduled_occurrence(eb, kDue - 1) == kDue);
  }
  NotifyOptions only_lost = cluster("ops");
  only_lost.missed = false;
  CHECK(notices_for(event(FireEvent::Kind::kMissed), nullptr, only_lost, "n1").empty());
  CHECK(notices_for(event(FireEvent::Kind::kMissed), nullptr, NotifyOptions{}, "n1").empty());
}

TEST_CASE("notify: a notification entry is a valid one-shot timer that describes its event", "[notify]") {
  const auto s = subject(1, "page-me");
  const auto v = notices_for(event(FireEvent::Kind::kCompleted, false), &s, cluster("ops"), "n2");
  const auto e = notification_entry(v[0], "n2", 12 * 3'600'000);
  REQUIRE(schedule::validate(e).ok());
  CHECK(e.entity == kNotifyEntity);
  CHECK(e.name.rfind("on_failure-", 0) == 0);
  CHECK(e.handler == "page-me");
  CHECK(e.semantics == schedule::Semantics::at_most_once);
  CHECK(e.misfire_window_ms == 12 * 3'600'000);
  CHECK(e.on_failure.empty());
  CHECK(is_notification_key(schedule::entry_key(e)));
  CHECK_FALSE(is_notification_key(schedule::entry_key("billing", "invoice")));
  const auto p = nlohmann::json::parse(e.payload);
  CHECK(p["event"] == "on_failure");
  CHECK(p["volume"] == "v");
  CHECK(p["entity"] == "billing");
  CHECK(p["name"] == "invoice");
  CHECK(p["scheduled"] == "2026-01-01T00:00:00Z");
  CHECK(p["run"] == 1);
  CHECK(p["node"] == "n2");
  CHECK(p["detail"] == "exit status 3");
  // Round trip through the store's encoding.
  auto back = schedule::decode_entry(schedule::encode_entry(e));
  REQUIRE(back.ok());
  CHECK(*back == e);
  // The on_failure and failed notices of one run are two entries.
  CHECK(schedule::entry_key(notification_entry(v[1], "n2", 1000)) != schedule::entry_key(e));
}

TEST_CASE("notify: nothing notifies about a notification", "[notify]") {
  FireEvent f = event(FireEvent::Kind::kCompleted, false);
  f.occ.entry_key = schedule::entry_key(std::string(kNotifyEntity), "failed-0123456789abcdef");
  CHECK(notices_for(f, nullptr, cluster("ops"), "n2").empty());
  f.kind = FireEvent::Kind::kMissed;
  CHECK(notices_for(f, nullptr, cluster("ops"), "n2").empty());
}

TEST_CASE("notify: withheld is told at least once, at due + withheld_after", "[notify]") {
  NotifyOptions o = cluster("ops");
  o.withheld_after_ms = 30'000;
  const Notice n = withheld_notice(event(FireEvent::Kind::kWithheld), o, "n1");
  CHECK(n.event == NotifyEvent::kWithheld);
  CHECK(n.instant_utc_ms == kDue + 30'000);
  const auto e = notification_entry(n, "n1", 1000);
  CHECK(e.semantics == schedule::Semantics::at_least_once);
  CHECK(e.name.rfind("withheld-", 0) == 0);
}

// The worker judges "last run" by the run count its dispatch carried (FireEvent::runs), not
// by whatever definition it holds: a worker the definition had not reached (swarm --notify
// seed 396: cut off by a one-way link when the entry was written) told the cluster that
// run 1 of 3 had failed for good, and the owner retried it.
TEST_CASE("notify: a worker without the definition judges the last run by the dispatch", "[notify]") {
  FireEvent first = event(FireEvent::Kind::kCompleted, false, 1);
  first.runs = 3;
  CHECK(notices_for(first, nullptr, cluster("ops"), "n2").empty());
  FireEvent last = event(FireEvent::Kind::kCompleted, false, 3);
  last.runs = 3;
  CHECK(kinds(notices_for(last, nullptr, cluster("ops"), "n2")) == std::vector<NotifyEvent>{NotifyEvent::kFailed});
  // The entry's on_failure travels with the dispatch too (swarm --notify seed 4226: the
  // worker lacked the definition and told only the cluster's handler).
  last.on_failure = "page-me";
  const auto told = notices_for(last, nullptr, cluster("ops"), "n2");
  REQUIRE(kinds(told) == std::vector<NotifyEvent>{NotifyEvent::kOnFailure, NotifyEvent::kFailed});
  CHECK(told[0].handler == "page-me");
  // The dispatch wins over a definition held here that differs (edited since): the owner
  // decides retries with the one it dispatched under.
  const auto once = subject(1, "page-me");
  CHECK(notices_for(first, &once, cluster("ops"), "n2").empty());
  FireEvent single = event(FireEvent::Kind::kCompleted, false, 1);
  single.runs = 1;
  single.on_failure = "page-me";
  const auto retries = subject(3, "page-me");
  CHECK(kinds(notices_for(single, &retries, cluster("ops"), "n2")) ==
        std::vector<NotifyEvent>{NotifyEvent::kOnFailure, NotifyEvent::kFailed});
}
