// caesium-bench replica-memory: the heap a replica spends per stored entry, split into
// the volume store (the replicated record, its key order and digest) and the scheduler
// (its per-entry slot, key copy, index cell and wheel timer), for one-shot entries like
// the ones `caesium-bench cluster` loads.  These two are the anonymous part of the
// cluster benchmark's "resident memory per 1M entries"; LMDB's mapped pages are the rest.
//
//   caesium-bench replica-memory [--json] [--entries 1000000]
//
// Memory is glibc's view of the heap (mallinfo2: bytes in use in chunks, with headers and
// rounding, plus mmapped blocks), before and after loading.  Baseline, measured in the
// same run: the key and value bytes themselves (what a structure with no overhead would
// hold), so the ratio says how many bytes the replica holds per byte of payload.
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/registry.h"
#include "schedule/entry_codec.h"
#include "schedule/scheduler.h"
#include "schedule/store.h"
#include "schedule/store_reading_host.h"

namespace caesium::bench {
namespace {

using namespace caesium::schedule;

constexpr int64_t kNow = 1'790'000'000'000;

size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

double per_entry(size_t before, size_t after, uint64_t n) {
  if (after < before) return std::nan("");  // sanitizer builds: mallinfo2 sees nothing
  return static_cast<double>(after - before) / static_cast<double>(n);
}

int run_replica_memory(const Args& args) {
  const auto n = static_cast<uint64_t>(args.get_int("entries", 1'000'000));
  if (n == 0) {
    std::fprintf(stderr, "caesium-bench replica-memory: --entries must be at least 1\n");
    return 2;
  }
  // One-shot timers due in an hour, handler `log`, at-least-once: what the cluster
  // benchmark writes through the API (entity "e", names "e<i>").
  std::vector<std::pair<std::string, std::string>> records;
  records.reserve(n);
  uint64_t payload = 0;
  for (uint64_t i = 0; i < n; ++i) {
    schedule::Entry e;
    e.entity = "e";
    e.name = "e" + std::to_string(i);
    Timer timer;
    timer.kind = TimerKind::at;
    timer.at_utc_ms = kNow + kMsPerHour + static_cast<int64_t>(i % 1000);
    e.timing = timer;
    e.handler = "log";
    e.created_utc_ms = kNow;
    e.origin = "n1";
    if (Status s = validate(e); !s.ok()) {
      std::fprintf(stderr, "caesium-bench replica-memory: bad entry: %s\n", s.error().message.c_str());
      return 1;
    }
    records.emplace_back(entry_key(e), encode_entry(e));
    payload += records.back().first.size() + records.back().second.size();
  }

  const size_t h0 = heap_in_use();
  VolumeStore store("main", "n1");
  for (const auto& [key, value] : records) (void)store.put(key, value, kNow);
  const size_t h1 = heap_in_use();
  StoreReadingHost host(store);
  Scheduler scheduler(ProcessId{"n1", 1}, SchedulerOptions{}, host, 0, kNow);
  Topology topology;
  topology.volumes["main"].replicas = {"n1", "n2", "n3"};
  scheduler.set_topology(topology, Clock{0, kNow});
  const size_t h2 = heap_in_use();
  for (const auto& [key, value] : records) scheduler.on_record("main", key, value, Clock{0, kNow});
  const size_t h3 = heap_in_use();
  if (scheduler.entry_count() != n) {
    std::fprintf(stderr, "caesium-bench replica-memory: the scheduler indexed %zu of %llu entries\n",
                 scheduler.entry_count(), static_cast<unsigned long long>(n));
    return 1;
  }

  const double payload_b = static_cast<double>(payload) / static_cast<double>(n);
  const double store_b = per_entry(h0, h1, n);
  const double sched_b = per_entry(h2, h3, n);
  const double total_b = store_b + sched_b;
  const double mib_per_1m = total_b * 1e6 / (1024.0 * 1024.0);
  if (args.json) {
    std::printf("{\"benchmark\":\"replica-memory\",\"entries\":%llu,\"key_and_value_bytes_per_entry\":%.1f,"
                "\"store_bytes_per_entry\":%.1f,\"scheduler_bytes_per_entry\":%.1f,\"total_bytes_per_entry\":%.1f,"
                "\"heap_mib_per_1m_entries\":%.1f,\"ratio_to_payload\":%.2f}\n",
                static_cast<unsigned long long>(n), payload_b, store_b, sched_b, total_b, mib_per_1m,
                total_b / payload_b);
    return 0;
  }
  std::printf("replica heap per one-shot entry, %llu entries\n", static_cast<unsigned long long>(n));
  std::printf("  %-44s %8.1f B  (baseline)\n", "key + value bytes", payload_b);
  std::printf("  %-44s %8.1f B\n", "volume store (record, key order, digest)", store_b);
  std::printf("  %-44s %8.1f B\n", "scheduler (slot, key, index cell, timer)", sched_b);
  std::printf("  %-44s %8.1f B  = %.1f MiB per 1M entries, %.2fx the payload\n", "total", total_b, mib_per_1m,
              total_b / payload_b);
  return 0;
}

CAESIUM_BENCH("replica-memory", "heap per stored entry: volume store + scheduler index vs payload bytes",
              run_replica_memory, {"entries", "N", "entries (default 1000000)"});

}  // namespace
}  // namespace caesium::bench
