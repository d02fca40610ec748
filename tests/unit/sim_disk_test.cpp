// The simulated disk: batches in seq order, group commit, durability, crash loses
// unsynced writes and keeps synced ones, restart with the disk intact or wiped.
#include <catch2/catch.hpp>

#include "sim/disk.h"
#include "sim_test_process.h"

using namespace caesium;
using namespace caesium::sim;
using namespace caesium::sim::testing;

namespace {
StorageBatch put(uint64_t seq, const std::string& key, const std::string& value) {
  StorageBatch b;
  b.seq = seq;
  b.ops.push_back({node::StorageOp::Kind::kPut, key, value});
  return b;
}
StorageBatch erase(uint64_t seq, const std::string& key) {
  StorageBatch b;
  b.seq = seq;
  b.ops.push_back({node::StorageOp::Kind::kErase, key, ""});
  return b;
}
}  // namespace

TEST_CASE("SimDisk: group commit makes batches durable in seq order", "[sim]") {
  SimDisk d;
  CHECK(d.submit_checked(put(1, "b", "1")).ok());
  CHECK(d.submit_checked(put(2, "a", "2")).ok());
  CHECK(d.wants_sync());
  CHECK(d.begin_sync() == 2);
  CHECK_FALSE(d.wants_sync());  // one sync at a time
  CHECK(d.submit_checked(erase(3, "b")).ok());
  CHECK(d.durable_seq() == 0);
  CHECK(d.load_all().value().empty());
  CHECK(d.complete_sync(2));
  CHECK(d.durable_seq() == 2);
  auto recs = d.load_all().value();
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].key == "a");  // key order
  CHECK(recs[1].key == "b");
  CHECK(d.wants_sync());
  CHECK(d.begin_sync() == 3);
  CHECK(d.complete_sync(3));
  CHECK(d.record_count() == 1);
}

TEST_CASE("SimDisk: a crash loses unsynced batches, keeps synced ones, wipe loses all", "[sim]") {
  SimDisk d;
  REQUIRE(d.submit_checked(put(1, "k1", "v1")).ok());
  d.complete_sync(d.begin_sync());
  REQUIRE(d.submit_checked(put(2, "k2", "v2")).ok());
  const uint64_t syncing = d.begin_sync();
  REQUIRE(d.submit_checked(put(3, "k3", "v3")).ok());
  CHECK(d.crash() == 2);
  CHECK_FALSE(d.complete_sync(syncing));  // the cancelled sync never lands
  auto recs = d.load_all().value();
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].key == "k1");
  // A new process lifetime may start its seqs again from 1.
  CHECK(d.submit_checked(put(1, "k4", "v4")).ok());
  d.flush();
  CHECK(d.record_count() == 2);
  d.wipe();
  CHECK(d.record_count() == 0);
}

TEST_CASE("SimDisk: a seq that does not increase is refused with a reason", "[sim]") {
  SimDisk d;
  REQUIRE(d.submit_checked(put(5, "a", "1")).ok());
  Status st = d.submit_checked(put(5, "b", "2"));
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("does not increase") != std::string::npos);
}

TEST_CASE("World: durability is reported after the sync latency, crash before it loses the write", "[sim]") {
  TestWorld tw(1, quiet_options());  // sync latency: constant 10 ms
  tw.p(0).batches.push_back(put(1, "entry", "a"));
  tw.world->drain_outputs(0);
  tw.world->run_until(5);
  CHECK(tw.p(0).durable.empty());
  tw.world->crash(0);
  tw.world->run_until(50);
  tw.world->restart(0, false);
  CHECK(tw.p(0).started_with.empty());  // never synced: lost

  tw.p(0).batches.push_back(put(1, "entry", "b"));
  tw.p(0).batches.push_back(put(2, "other", "c"));
  tw.world->drain_outputs(0);
  tw.world->run_until(100);
  CHECK(tw.p(0).durable == std::vector<uint64_t>{2});  // one group commit for both
  tw.p(0).batches.push_back(put(3, "late", "d"));
  tw.world->drain_outputs(0);
  tw.world->crash(0);
  tw.world->restart(0, false);
  REQUIRE(tw.p(0).started_with.size() == 2);
  CHECK(tw.p(0).started_with[0].key == "entry");
  CHECK(tw.p(0).started_with[0].value == "b");
  CHECK(tw.p(0).started_with[1].key == "other");

  tw.world->crash(0);
  tw.world->restart(0, true);
  CHECK(tw.p(0).started_with.empty());  // wiped
  Report r;
  tw.world->finish(r);
  CHECK(r.figures["sim.disk.batches_lost"] == 2);
  CHECK(r.violations.empty());
}

TEST_CASE("World: a storage seq that goes backwards is a violation", "[sim]") {
  TestWorld tw(1, quiet_options());
  tw.p(0).batches.push_back(put(2, "a", "1"));
  tw.p(0).batches.push_back(put(1, "b", "1"));
  tw.world->drain_outputs(0);
  Report r;
  tw.world->finish(r);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "storage_seq");
}

TEST_CASE("World: a graceful leave flushes the disk and stops the process", "[sim]") {
  TestWorld tw(2, quiet_options());
  tw.p(0).batches.push_back(put(1, "k", "v"));
  tw.world->drain_outputs(0);
  tw.world->leave(0);
  CHECK(tw.p(0).left);
  CHECK(tw.world->is_up(0));  // still running during the grace period
  tw.world->run_until(3 * kMsPerSecond);
  CHECK_FALSE(tw.world->is_up(0));
  CHECK(tw.world->disk(0).record_count() == 1);
  tw.world->restart(0, false);
  CHECK(tw.p(0).started_with.size() == 1);
}
