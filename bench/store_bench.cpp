// caesium-bench store: memory per record and time per operation of the volume store and
// its digest, against a plain std::map<std::string, Record> (no digest, no tombstone
// index) measured in the same run.
//
//   caesium-bench store [--json] [--entries 1000000] [--seed N]
//
// Memory is glibc's view of the heap (mallinfo2: bytes in use in chunks, including each
// chunk's header and rounding, plus mmapped blocks) before and after loading the records;
// the key and value bytes are subtracted, so "overhead" is everything the structure adds.
// Keys look like entries (`e123/caesium/schedule/entry-456789`, ~34 B), values are 64 B.
// Digest update is timed on the store's own Digest type with as many items, changing the
// entry hash of random items (what every overwrite does), so cache misses are realistic.
#include <malloc.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "bench/registry.h"
#include "schedule/store.h"

namespace caesium::bench {
namespace {

using schedule::Digest;
using schedule::DigestItem;
using schedule::Record;
using schedule::Version;
using schedule::VolumeStore;

constexpr int64_t kNow = 1'700'000'000'000;

size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

void key_of(uint64_t i, std::string* out) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "e%llu/caesium/schedule/entry-%llu",
                              static_cast<unsigned long long>(i % 1000), static_cast<unsigned long long>(i));
  out->assign(buf, static_cast<size_t>(n));
}

double ns_since(std::chrono::steady_clock::time_point t0, uint64_t ops) {
  const auto dt = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration<double, std::nano>(dt).count() / static_cast<double>(ops);
}

struct Figures {
  uint64_t entries = 0;
  double payload_bytes_per_entry = 0;
  double store_overhead_bytes = 0, baseline_overhead_bytes = 0;
  double digest_tree_bytes = 0;
  double put_ns = 0, baseline_put_ns = 0;
  double overwrite_ns = 0, baseline_overwrite_ns = 0;
  double merge_ns = 0, get_ns = 0, baseline_get_ns = 0;
  double digest_update_ns = 0, digest_insert_ns = 0, digest_erase_ns = 0;
  unsigned digest_depth = 0;
};

// Overhead per entry from a heap delta, or NaN when the allocator does not report
// (sanitizer builds replace malloc, and mallinfo2 then sees nothing).
double overhead_per_entry(size_t before, size_t after, uint64_t payload, uint64_t n) {
  if (after < before + payload) return std::nan("");
  return static_cast<double>(after - before - payload) / static_cast<double>(n);
}

std::string json_number(double v) {
  if (std::isnan(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

int run_store(const Args& args) {
  const auto n = static_cast<uint64_t>(args.get_int("entries", 1'000'000));
  Rng rng(static_cast<uint64_t>(args.get_int("seed", 1)));
  const std::string value(64, 'p');
  std::string key;
  Figures f;
  f.entries = n;
  uint64_t payload = 0;
  for (uint64_t i = 0; i < n; ++i) {
    key_of(i, &key);
    payload += key.size() + value.size();
  }
  f.payload_bytes_per_entry = static_cast<double>(payload) / static_cast<double>(n);

  {  // The store.
    const size_t before = heap_in_use();
    auto store = std::make_unique<VolumeStore>("default", "node-1");
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(i, &key);
      (void)store->put(key, value, kNow + static_cast<int64_t>(i / 1000));
    }
    f.put_ns = ns_since(t0, n);
    f.store_overhead_bytes = overhead_per_entry(before, heap_in_use(), payload, n);
    f.digest_tree_bytes = static_cast<double>(store->digest().memory_bytes()) / static_cast<double>(n);
    f.digest_depth = store->digest().depth();
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(rng.below(n), &key);
      (void)store->put(key, value, kNow + 10'000);
    }
    f.overwrite_ns = ns_since(t0, n);
    uint64_t found = 0;
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(rng.below(n), &key);
      found += store->find(key).has_value();
    }
    f.get_ns = ns_since(t0, n);
    if (found != n) std::fprintf(stderr, "caesium-bench store: lookups missed\n");
    // Merge: newer versions from another node onto existing keys.
    std::vector<Record> incoming;
    const uint64_t m = std::min<uint64_t>(n, 200'000);
    incoming.reserve(m);
    for (uint64_t i = 0; i < m; ++i) {
      key_of(rng.below(n), &key);
      incoming.push_back(Record{key, value, Version{kNow + 20'000 + static_cast<int64_t>(i), 0, "node-2"}});
    }
    t0 = std::chrono::steady_clock::now();
    for (const Record& r : incoming) (void)store->merge(r, kNow + 20'000);
    f.merge_ns = ns_since(t0, m);
  }

  {  // Baseline: std::map<std::string, Record>, no digest.
    const size_t before = heap_in_use();
    auto base = std::make_unique<std::map<std::string, Record>>();
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(i, &key);
      (*base)[key] = Record{key, value, Version{kNow + static_cast<int64_t>(i / 1000), 0, "node-1"}};
    }
    f.baseline_put_ns = ns_since(t0, n);
    // Record holds the key again (the map's key is a second copy): count it as overhead,
    // since that is what this layout costs.
    f.baseline_overhead_bytes = overhead_per_entry(before, heap_in_use(), payload, n);
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(rng.below(n), &key);
      Record& r = (*base)[key];
      r.value = value;
      r.version = Version{kNow + 10'000, 0, "node-1"};
    }
    f.baseline_overwrite_ns = ns_since(t0, n);
    uint64_t found = 0;
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      key_of(rng.below(n), &key);
      found += base->count(key);
    }
    f.baseline_get_ns = ns_since(t0, n);
    if (found != n) std::fprintf(stderr, "caesium-bench store: baseline lookups missed\n");
  }

  {  // The digest alone.
    std::vector<DigestItem> items(n);
    for (auto& it : items) it = DigestItem{rng.next_u64(), rng.next_u64()};
    Digest d;
    auto t0 = std::chrono::steady_clock::now();
    for (auto& it : items) d.insert(&it);
    f.digest_insert_ns = ns_since(t0, n);
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      DigestItem& it = items[rng.below(n)];
      const uint64_t old = it.entry_hash;
      it.entry_hash = rng.next_u64();
      d.update(&it, old);
    }
    f.digest_update_ns = ns_since(t0, n);
    // Erase half (a shrink would need all): random order.
    std::vector<uint64_t> order(n);
    for (uint64_t i = 0; i < n; ++i) order[i] = i;
    rng.shuffle(order.begin(), order.end());
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n / 2; ++i) d.erase(&items[order[i]]);
    f.digest_erase_ns = ns_since(t0, n / 2);
  }

  if (args.json) {
    std::printf("{\"benchmark\":\"store\",\"entries\":%llu,\"key_and_value_bytes_per_entry\":%.1f,"
                "\"store_overhead_bytes_per_entry\":%s,\"baseline_map_overhead_bytes_per_entry\":%s,"
                "\"digest_tree_bytes_per_entry\":%.2f,\"digest_depth\":%u,"
                "\"put_ns\":%.0f,\"baseline_put_ns\":%.0f,\"put_ratio\":%.2f,"
                "\"overwrite_ns\":%.0f,\"baseline_overwrite_ns\":%.0f,\"overwrite_ratio\":%.2f,"
                "\"get_ns\":%.0f,\"baseline_get_ns\":%.0f,\"merge_ns\":%.0f,"
                "\"digest_update_ns\":%.0f,\"digest_insert_ns\":%.0f,\"digest_erase_ns\":%.0f}\n",
                static_cast<unsigned long long>(f.entries), f.payload_bytes_per_entry,
                json_number(f.store_overhead_bytes).c_str(), json_number(f.baseline_overhead_bytes).c_str(),
                f.digest_tree_bytes, f.digest_depth, f.put_ns, f.baseline_put_ns,
                f.put_ns / f.baseline_put_ns, f.overwrite_ns, f.baseline_overwrite_ns,
                f.overwrite_ns / f.baseline_overwrite_ns, f.get_ns, f.baseline_get_ns, f.merge_ns,
                f.digest_update_ns, f.digest_insert_ns, f.digest_erase_ns);
    return 0;
  }
  std::printf("volume store, %llu entries (key + value = %.1f B per entry, not counted below)\n",
              static_cast<unsigned long long>(f.entries), f.payload_bytes_per_entry);
  std::printf("%-34s %12s %12s %8s\n", "", "VolumeStore", "std::map", "ratio");
  std::printf("%-34s %12.1f %12.1f %7.2fx\n", "overhead bytes per entry", f.store_overhead_bytes,
              f.baseline_overhead_bytes, f.store_overhead_bytes / f.baseline_overhead_bytes);
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "put new key, ns", f.put_ns, f.baseline_put_ns, f.put_ns / f.baseline_put_ns);
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "overwrite random key, ns", f.overwrite_ns, f.baseline_overwrite_ns,
              f.overwrite_ns / f.baseline_overwrite_ns);
  std::printf("%-34s %12.0f %12.0f %7.2fx\n", "lookup random key, ns", f.get_ns, f.baseline_get_ns,
              f.get_ns / f.baseline_get_ns);
  std::printf("%-34s %12.0f\n", "merge newer remote record, ns", f.merge_ns);
  std::printf("digest (depth %u): tree %.2f B per entry; update %.0f ns, insert %.0f ns, erase %.0f ns per change\n",
              f.digest_depth, f.digest_tree_bytes, f.digest_update_ns, f.digest_insert_ns, f.digest_erase_ns);
  return 0;
}

CAESIUM_BENCH("store", "volume store bytes/entry, put/merge ns, digest update ns vs std::map", run_store,
              {"entries", "N", "entries (default 1000000)"},
              {"seed", "N", "PRNG seed (default 1)"});

}  // namespace
}  // namespace caesium::bench
