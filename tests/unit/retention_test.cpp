// Retention: occurrence records and grants past the occurrence retention are dropped,
// and a node does it in bounded steps (schedule/retention.h), so a store holding millions
// of occurrence records never stalls its event loop for a whole pass.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/rng.h"
#include "node/core/node.h"
#include "schedule/occurrence.h"
#include "schedule/retention.h"
#include "schedule/scheduler.h"
#include "schedule/store.h"
#include "schedule/store_reading_host.h"
#include "tests/unit/test_seed.h"

using namespace caesium;
using namespace caesium::schedule;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000;
constexpr int64_t kHour = kMsPerHour;

OccurrenceId occ_of(uint64_t i, int64_t scheduled) {
  return OccurrenceId{"e" + std::to_string(i % 13) + "/caesium/schedule/n" + std::to_string(i), scheduled};
}

}  // namespace

TEST_CASE("a retention sweep drops expired occurrence records in bounded steps and nothing else", "[retention]") {
  const uint64_t seed = test::seed_or(11);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  VolumeStore store("v", "n1");
  const int64_t horizon = kT0;
  std::set<std::string> expired, kept;
  for (uint64_t i = 0; i < 2'000; ++i) {
    // Instants on both sides of the horizon, in random order over random entities.
    const int64_t t = kT0 - kHour + static_cast<int64_t>(rng.below(2 * kHour));
    const OccurrenceId id = occ_of(i, t);
    const std::string owner = owner_record_key(id, "n1");
    const std::string worker = worker_record_key(id, "f" + std::to_string(i));
    (void)store.put(owner, "o", kT0);
    (void)store.put(worker, "w", kT0);
    (t < horizon ? expired : kept).insert(owner);
    (t < horizon ? expired : kept).insert(worker);
    if (i % 10 == 0) {  // entries themselves are not occurrence records
      const std::string entry = id.entry_key;
      (void)store.put(entry, "entry", kT0);
      kept.insert(entry);
    }
  }
  (void)store.put("~occ/not-an-occurrence-key", "?", kT0);  // unreadable: dropped
  expired.insert("~occ/not-an-occurrence-key");
  REQUIRE(!expired.empty());
  REQUIRE(!kept.empty());

  RetentionSweep sweep;
  CHECK(sweep.step(store, horizon, 100).done);  // no pass yet: nothing visited
  CHECK(store.size() == expired.size() + kept.size());
  sweep.start();
  constexpr size_t kMax = 37;
  size_t steps = 0, dropped = 0;
  const size_t occ_records = expired.size() + kept.size() - 200;  // minus the 200 entries
  for (;;) {
    const RetentionSweep::Step s = sweep.step(store, horizon, kMax);
    ++steps;
    REQUIRE(s.visited <= kMax);
    REQUIRE(s.dropped <= s.visited);
    dropped += s.dropped;
    if (s.done) break;
    REQUIRE(steps <= occ_records / kMax + 1);
  }
  CHECK_FALSE(sweep.running());
  CHECK(steps == occ_records / kMax + 1);  // every occurrence record visited once
  CHECK(dropped == expired.size());
  for (const auto& k : expired) CHECK_FALSE(store.find(k).has_value());
  for (const auto& k : kept) CHECK(store.find(k).has_value());
  CHECK(store.size() == kept.size());
  CHECK(store.check_invariants());
}

TEST_CASE("records added during a sweep ahead of its cursor are swept in that pass, behind it in the next",
          "[retention]") {
  VolumeStore store("v", "n1");
  for (uint64_t i = 0; i < 100; ++i) (void)store.put(owner_record_key(occ_of(i, kT0 + kHour), "n1"), "o", kT0);
  RetentionSweep sweep;
  sweep.start();
  REQUIRE_FALSE(sweep.step(store, kT0, 10).done);
  // "a..." sorts before every entity "e<n>" visited so far; "z..." after all of them.
  const std::string behind = owner_record_key(OccurrenceId{"a/caesium/schedule/x", kT0 - 1}, "n1");
  const std::string ahead = owner_record_key(OccurrenceId{"z/caesium/schedule/x", kT0 - 1}, "n1");
  (void)store.put(behind, "o", kT0);
  (void)store.put(ahead, "o", kT0);
  sweep.start();  // a pass is running: this does not restart it
  while (!sweep.step(store, kT0, 10).done) {}
  CHECK(store.find(behind).has_value());
  CHECK_FALSE(store.find(ahead).has_value());
  sweep.start();
  while (!sweep.step(store, kT0, 10).done) {}
  CHECK_FALSE(store.find(behind).has_value());
  CHECK(store.size() == 100);
}

TEST_CASE("purge_tombstones purges at most the limit, oldest first", "[retention][store]") {
  VolumeStore store("v", "n1");
  const int64_t grace = store.options().tombstone_grace_ms;
  for (int i = 0; i < 10; ++i) (void)store.erase("k" + std::to_string(i), kT0 + i);
  CHECK(store.tombstone_count() == 10);
  const int64_t later = kT0 + grace + 100;
  CHECK(store.purge_tombstones(later, 3) == 3);
  CHECK_FALSE(store.find("k0").has_value());
  CHECK_FALSE(store.find("k2").has_value());
  CHECK(store.find("k3").has_value());  // the oldest went first
  CHECK(store.purge_tombstones(later, 3) == 3);
  CHECK(store.purge_tombstones(later, 3) == 3);
  CHECK(store.purge_tombstones(later, 3) == 1);
  CHECK(store.purge_tombstones(later, 3) == 0);
  CHECK(store.tombstone_count() == 0);
}

namespace {

class GrantRecordingHost : public StoreReadingHost {
 public:
  using StoreReadingHost::StoreReadingHost;
  void local_erase(const std::string& key) override { erased.push_back(key); }
  std::vector<std::string> erased;
};

// A scheduler of node n1 for volume "v" (replicas n1-n3), one-hour retention, recording
// the grants it erases.
struct GrantPurgeFixture {
  explicit GrantPurgeFixture(size_t purge_step = SchedulerOptions{}.purge_step)
      : host(store), sched(ProcessId{"n1", 1}, options(purge_step), host, 0, kT0) {
    Topology topology;
    topology.volumes["v"].replicas = {"n1", "n2", "n3"};
    sched.set_topology(topology, Clock{0, kT0});
  }
  static SchedulerOptions options(size_t purge_step) {
    SchedulerOptions o;
    o.occurrence_retention_ms = kHour;
    o.purge_step = purge_step;
    return o;
  }
  VolumeStore store{"v", "n1"};
  GrantRecordingHost host;
  Scheduler sched;
};

}  // namespace

TEST_CASE("the scheduler drops exactly the grants past retention, whatever order they were granted in",
          "[retention][scheduler]") {
  const uint64_t seed = test::seed_or(5);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  GrantPurgeFixture f;
  Scheduler& sched = f.sched;
  GrantRecordingHost& host = f.host;

  std::vector<std::pair<int64_t, std::string>> grants;  // (instant, key)
  for (uint64_t i = 0; i < 500; ++i) {
    // Several instants per entry, loaded in random order.
    const OccurrenceId id = occ_of(i % 40, kT0 + static_cast<int64_t>(rng.below(2 * kHour)));
    const std::string key = grant_key("v", id);
    if (std::any_of(grants.begin(), grants.end(), [&](const auto& g) { return g.second == key; })) continue;
    Vote vote;
    vote.promised_by = ProcessId{"n2", 9};
    sched.on_local_record(key, encode(vote));
    grants.emplace_back(id.scheduled_utc_ms, key);
  }
  REQUIRE(sched.grant_count() == grants.size());

  auto expected_erased = [&](int64_t now_utc) {
    std::set<std::string> keys;
    for (const auto& [t, k] : grants) {
      if (t < now_utc - kHour) keys.insert(k);
    }
    return keys;
  };
  // An hour and a half in: the grants of the first half hour expire.
  const int64_t mid = kT0 + kHour + kHour / 2;
  sched.on_tick(Clock{kHour + kHour / 2, mid});
  const std::set<std::string> first(host.erased.begin(), host.erased.end());
  CHECK(first.size() == host.erased.size());  // each erased once
  CHECK(first == expected_erased(mid));
  REQUIRE(!first.empty());
  CHECK(sched.grant_count() == grants.size() - first.size());
  // Three hours in: all of them.
  sched.on_tick(Clock{3 * kHour, kT0 + 3 * kHour});
  const std::set<std::string> all(host.erased.begin(), host.erased.end());
  CHECK(all.size() == host.erased.size());
  CHECK(all.size() == grants.size());
  CHECK(sched.grant_count() == 0);
  sched.check_invariants();

  // One-shot timers are each an entry of their own: the ids of expired ones are reused,
  // so a day of them does not grow the table (it used to until a compaction renumbered
  // every occurrence and vote at once).
  const size_t rows = sched.interned_rows();
  CHECK(rows <= 40);  // the first round named 40 entries
  for (uint64_t round = 1; round <= 5; ++round) {
    const int64_t base = kT0 + 3 * kHour * static_cast<int64_t>(round);
    for (uint64_t i = 0; i < 40; ++i) {
      Vote vote;
      vote.promised_by = ProcessId{"n3", round};
      sched.on_local_record(grant_key("v", occ_of(1'000 * round + i, base + static_cast<int64_t>(i))), encode(vote));
    }
    CHECK(sched.grant_count() == 40);
    sched.check_invariants();
    sched.on_tick(Clock{3 * kHour * static_cast<int64_t>(round) + 2 * kHour, base + 2 * kHour});
    CHECK(sched.grant_count() == 0);
    sched.check_invariants();
  }
  CHECK(sched.interned_rows() == rows);
  CHECK(host.erased.size() == grants.size() + 5 * 40);
}

TEST_CASE("votes that expire together are dropped a bounded number per turn", "[retention][scheduler]") {
  GrantPurgeFixture f(/*purge_step=*/100);
  Scheduler& sched = f.sched;
  GrantRecordingHost& host = f.host;
  Vote vote;
  vote.promised_by = ProcessId{"n2", 9};
  for (uint64_t i = 0; i < 1'050; ++i) sched.on_local_record(grant_key("v", occ_of(i, kT0 + 1'000)), encode(vote));
  sched.on_local_record(grant_key("v", occ_of(5'000, kT0 + 2 * kHour)), encode(vote));  // not expiring

  const Clock later{kHour + 2'000, kT0 + kHour + 2'000};  // a burst's votes, all past retention
  sched.on_tick(later);
  CHECK(host.erased.size() == 100);
  CHECK(sched.next_deadline_mono() == later.mono_ms);  // the rest next turn, at once
  int turns = 1;
  while (sched.next_deadline_mono() <= later.mono_ms && turns < 50) {
    const size_t before = host.erased.size();
    sched.on_tick(later);
    CHECK(host.erased.size() - before <= 100);
    ++turns;
  }
  CHECK(turns == 11);
  CHECK(host.erased.size() == 1'050);
  CHECK(sched.grant_count() == 1);
  CHECK(sched.next_deadline_mono() > later.mono_ms);
}

namespace {

// One node ("n1", the only replica of volume "v") restarted from storage that holds
// occurrence records and grants; storage batches are recorded and made durable at once.
struct RestartedNode {
  std::unique_ptr<node::Node> node;
  Clock clock;
  std::vector<node::StorageOp> ops;

  static node::NodeOptions options() {
    node::NodeOptions o;
    o.id = "n1";
    o.gossip_addr = "127.0.0.1:17101";
    o.stream_addr = "127.0.0.1:17102";
    node::ClusterConfig c;
    c.epoch = 1;
    c.nodes = {{"n1", std::nullopt, {}}};
    c.volumes = {{"v", {"n1"}, {}}};
    o.initial_config = node::normalize(c).value();
    o.scheduler.occurrence_retention_ms = kHour;
    o.maintenance_step_records = 50;
    return o;
  }

  void drain() {
    node::StorageBatch b;
    while (node->poll_storage(b)) {
      for (auto& op : b.ops) ops.push_back(std::move(op));
      node->on_durable(b.seq, clock);
    }
    node::Transmit t;
    while (node->poll_transmit(t)) {}
    node::Invocation inv;
    while (node->poll_invocation(inv)) {}
    node::NodeEvent e;
    while (node->poll_event(e)) {}
  }
  void tick() {
    node->on_tick(clock);
    drain();
  }
};

}  // namespace

TEST_CASE("a node drops occurrence records and grants past retention, a bounded step per turn", "[retention][node]") {
  // A fresh start writes the data directory's own records; keep them for the restart.
  RestartedNode first{std::make_unique<node::Node>(RestartedNode::options(), 3), Clock{1'000, kT0}, {}};
  REQUIRE(first.node->start({}, first.clock).ok());
  first.drain();
  std::map<std::string, std::string> disk;
  for (const auto& op : first.ops) {
    if (op.kind == node::StorageOp::Kind::kPut) disk[op.key] = op.value;
    else disk.erase(op.key);
  }
  first.node.reset();

  // 300 occurrences 10 s apart from T0, each with an owner record and a grant.
  std::vector<std::string> occ_keys, grant_keys;
  for (uint64_t i = 0; i < 300; ++i) {
    const OccurrenceId id = occ_of(i, kT0 + static_cast<int64_t>(i) * 10'000);
    occ_keys.push_back(owner_record_key(id, "n1"));
    const std::string value = encode(OwnerRecord{});
    RecordView r;
    r.key = occ_keys.back();
    r.value = value;
    r.physical_ms = kT0;
    r.origin = "n1";
    disk["v/v/" + occ_keys.back()] = node::encode_stored_record(r);
    Vote vote;
    vote.promised_by = ProcessId{"n1", 1};
    grant_keys.push_back(grant_key("v", id));
    disk[grant_keys.back()] = encode(vote);
  }
  std::vector<node::StoredRecord> records;
  for (const auto& [k, v] : disk) records.push_back(node::StoredRecord{k, v});

  RestartedNode n{std::make_unique<node::Node>(RestartedNode::options(), 4), Clock{2'000, kT0 + 1'000}, {}};
  REQUIRE(n.node->start(records, n.clock).ok());
  n.drain();
  // The first maintenance round runs at start (nothing is expired yet); let it finish.
  for (int i = 0; i < 20 && n.node->next_deadline_mono() <= n.clock.mono_ms; ++i) n.tick();
  REQUIRE(n.node->next_deadline_mono() > n.clock.mono_ms);
  const schedule::VolumeStore* store = n.node->store("v");
  REQUIRE(store != nullptr);
  REQUIRE(store->size() == 300);  // nothing expired yet

  // At T0 + 1 h + 1,495 s the first 150 occurrences (T0 .. T0 + 1,490 s) are past the
  // retention (1 h); the 151st (T0 + 1,500 s) is not.
  const int64_t jump = kT0 + kHour + 1'495'000 - n.clock.utc_ms;
  n.clock.mono_ms += jump;
  n.clock.utc_ms += jump;
  n.ops.clear();
  n.tick();
  // One step visits at most 50 records, so at most 50 are gone, and the node asks to be
  // called again at once.
  CHECK(store->size() >= 250);
  CHECK(store->size() < 300);
  CHECK(n.node->next_deadline_mono() == n.clock.mono_ms);
  int turns = 1;
  while (n.node->next_deadline_mono() <= n.clock.mono_ms && turns < 20) {
    const size_t before = store->size();
    n.tick();
    CHECK(before - store->size() <= 50);
    ++turns;
  }
  CHECK(turns == 7);  // 300 records in steps of 50, and one that finds the end
  CHECK(n.node->next_deadline_mono() > n.clock.mono_ms);
  CHECK(store->size() == 150);
  for (size_t i = 0; i < 300; ++i) CHECK(store->find(occ_keys[i]).has_value() == (i >= 150));

  // What reached storage: the dropped records' and grants' erasures, nothing else erased.
  std::set<std::string> erased;
  for (const auto& op : n.ops) {
    if (op.kind == node::StorageOp::Kind::kErase) erased.insert(op.key);
  }
  std::set<std::string> expected;
  for (size_t i = 0; i < 150; ++i) {
    expected.insert("v/v/" + occ_keys[i]);
    expected.insert(grant_keys[i]);
  }
  CHECK(erased == expected);
}
