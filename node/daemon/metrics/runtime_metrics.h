// Counters the daemon keeps for the metrics endpoint (the API exposes them; the Node
// core keeps its own in NodeCounters).  Plain structs, written on the loop thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace caesium::daemon {

// A fixed-bucket latency histogram in microseconds, Prometheus-shaped: `counts[i]` holds
// observations <= kBoundsUs[i] (not cumulative), the last bucket everything above.
struct LatencyHistogram {
  static constexpr std::array<int64_t, 16> kBoundsUs = {
      100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 500'000,
      1'000'000, 2'500'000, 5'000'000, 10'000'000};
  std::array<uint64_t, kBoundsUs.size() + 1> counts{};
  uint64_t count = 0;
  int64_t sum_us = 0;
  int64_t max_us = 0;

  void observe(int64_t us) {
    size_t i = 0;
    while (i < kBoundsUs.size() && us > kBoundsUs[i]) ++i;
    ++counts[i];
    ++count;
    sum_us += us;
    if (us > max_us) max_us = us;
  }
};

// Group commit: one LMDB write transaction (+ fsync) per group of storage batches.
struct StorageMetrics {
  uint64_t commits = 0;        // write transactions committed
  uint64_t batches = 0;        // Node storage batches they held
  uint64_t ops = 0;            // puts + erases
  uint64_t bytes = 0;          // key + value bytes written
  uint64_t failures = 0;       // commits that failed (retried)
  uint64_t map_resizes = 0;    // MDB_MAP_FULL -> map doubled
  uint64_t max_group_batches = 0;
  uint64_t map_bytes = 0;      // current LMDB map size
  LatencyHistogram commit_latency;  // from the start of the write txn to after the sync
};

// The UDP/TCP transport.
struct TransportMetrics {
  uint64_t datagrams_in = 0, datagrams_out = 0;
  uint64_t datagrams_oversize_in = 0;   // dropped: larger than the 1400-byte budget
  uint64_t datagrams_oversize_out = 0;  // dropped before sending (a core bug if ever > 0)
  uint64_t datagram_send_errors = 0;
  uint64_t frames_in = 0, frames_out = 0;
  uint64_t frames_dropped = 0;          // send queue full (peer unreachable or slow): oldest dropped
  uint64_t bad_frames = 0;              // a bad length prefix: connection closed
  uint64_t connects = 0, connect_failures = 0;
  uint64_t connections_accepted = 0, connections_refused = 0;
  uint64_t unresolved_drops = 0;        // no address for a destination (yet)
  uint64_t connections_open = 0;        // gauge: inbound + outbound
};

struct DaemonMetrics {
  StorageMetrics storage;
  TransportMetrics transport;
  uint64_t invocations_started = 0;
  uint64_t invocations_finished = 0;
  uint64_t invocations_failed = 0;
  uint64_t loop_turns = 0;  // drains of the Node's outputs
};

}  // namespace caesium::daemon
