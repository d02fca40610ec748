// The seam between the sans-IO Node core and whatever drives it: the daemon (libuv,
// sockets, LMDB, processes) or the simulator (virtual time, network, disks).
//
// quinn-style: the driver feeds inputs (`on_*`, with the two clocks as values) and
// drains outputs (`poll_*`, `next_deadline_mono`).  The same core runs in both, so
// what the simulator verifies is the code that ships.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "schedule/invocation.h"

namespace caesium::node {

using caesium::Clock;  // base/time.h: {mono_ms, utc_ms}

enum class Channel : uint8_t {
  kDatagram = 0,  // UDP: gossip; every payload <= 1400 bytes
  kStream = 1,    // TCP, length-prefixed frames: anti-entropy, claims, dispatch, push-pull
};

// One outgoing frame, already encoded and authenticated.
struct Transmit {
  Channel channel = Channel::kDatagram;
  std::string to_addr;  // datagram: the peer's gossip address; stream: its stream address
  std::string bytes;
};

// --- Storage --------------------------------------------------------------------------
// The core decides what is stored (keys are namespaced by the core); the driver decides
// how.  Batches are applied in seq order.  Durability of seq N implies durability of
// every batch before it, so a driver may group-commit many batches in one sync.
struct StorageOp {
  enum class Kind : uint8_t { kPut = 0, kErase = 1 };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // empty for kErase
};

struct StorageBatch {
  uint64_t seq = 0;
  std::vector<StorageOp> ops;
};

struct StoredRecord {
  std::string key;
  std::string value;
};

// The storage seam (LMDB in the daemon, a simulated disk in the simulator).
class Storage {
 public:
  virtual ~Storage() = default;
  // Every record, in key order.  Called once, at start; normal operation never reads.
  // A corrupt or foreign store is an Error, not a crash.
  virtual Result<std::vector<StoredRecord>> load_all() = 0;
  // Queues a batch; it becomes durable later, in seq order.
  virtual void submit(StorageBatch batch) = 0;
  // The highest seq known durable (0 = none yet).
  virtual uint64_t durable_seq() const = 0;
};

// --- Handler invocations ----------------------------------------------------------------
// What a worker runs (schedule/invocation.h); the driver runs it and reports back.
using schedule::Invocation;
using schedule::InvocationResult;

}  // namespace caesium::node
