// The scheduler's entry index: slots, the key arena and its compaction, the hash index.
// The firing protocol itself is proven in the simulator (tests/sim); this checks that
// after many creations and removals every entry is still found under its own key with
// its own schedule, and removed ones are gone.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "base/rng.h"
#include "schedule/entry_codec.h"
#include "schedule/scheduler.h"
#include "schedule/store.h"
#include "schedule/store_reading_host.h"
#include "tests/unit/test_seed.h"

using namespace caesium;
using namespace caesium::schedule;

namespace {

constexpr int64_t kNow = 1'790'000'000'000;

// Entry i of generation g: a one-shot timer whose instant encodes both, so a slot that
// answered for the wrong key (or kept a removed entry's schedule) shows.
Entry entry_for(uint64_t i, int gen) {
  Entry e;
  e.entity = "entity-" + std::to_string(i % 97);
  e.name = "a-longer-entry-name-" + std::to_string(i);
  Timer t;
  t.kind = TimerKind::at;
  t.at_utc_ms = kNow + kMsPerHour + static_cast<int64_t>(i) * 1000 + gen;
  e.timing = t;
  e.handler = "log";
  e.origin = "n1";
  e.created_utc_ms = kNow;
  return e;
}

}  // namespace

TEST_CASE("scheduler index: entries are found under their own key through removals and arena compaction",
          "[scheduler]") {
  const uint64_t seed = test::seed_or(7);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  VolumeStore store("main", "n1");
  StoreReadingHost host(store);
  Scheduler sched(ProcessId{"n1", 1}, SchedulerOptions{}, host, 0, kNow);
  Topology topology;
  topology.volumes["main"].replicas = {"n1", "n2", "n3"};
  sched.set_topology(topology, Clock{0, kNow});
  const Clock now{0, kNow};

  constexpr uint64_t kEntries = 20'000;  // ~45-byte keys: removing most leaves > 64 KiB of garbage
  std::vector<int> gen(kEntries, -1);    // -1: absent
  auto put = [&](uint64_t i, int g) {
    const Entry e = entry_for(i, g);
    const std::string key = entry_key(e);
    const std::string value = encode_entry(e);
    (void)store.put(key, value, kNow);
    sched.on_record("main", key, value, now);
    gen[i] = g;
  };
  auto remove = [&](uint64_t i) {
    const std::string key = entry_key(entry_for(i, 0));
    (void)store.erase(key, kNow);
    sched.on_record("main", key, std::nullopt, now);
    gen[i] = -1;
  };
  auto verify = [&] {
    size_t live = 0;
    for (uint64_t i = 0; i < kEntries; ++i) {
      const auto next = sched.next_scheduled("main", entry_key(entry_for(i, 0)));
      if (gen[i] < 0) {
        REQUIRE_FALSE(next.has_value());
        continue;
      }
      ++live;
      REQUIRE(next.has_value());
      REQUIRE(*next == kNow + kMsPerHour + static_cast<int64_t>(i) * 1000 + gen[i]);
    }
    REQUIRE(sched.entry_count() == live);
    sched.check_invariants();  // asserts in debug and sanitizer builds
  };

  for (uint64_t i = 0; i < kEntries; ++i) put(i, 0);
  verify();
  for (uint64_t i = 0; i < kEntries; ++i) {  // remove ~3/4, in random order of decision
    if (rng.below(4) != 0) remove(i);
  }
  verify();
  for (uint64_t i = 0; i < kEntries; ++i) {  // bring some back, and redefine some survivors
    if (gen[i] < 0 && rng.below(3) == 0) put(i, 1);
    else if (gen[i] == 0 && rng.below(2) == 0) put(i, 2);
  }
  verify();
  CHECK(sched.counters().bad_records == 0);
  CHECK(sched.next_scheduled("main", "no-such/caesium/schedule/key") == std::nullopt);
  CHECK(sched.next_scheduled("other-volume", entry_key(entry_for(1, 0))) == std::nullopt);
}
