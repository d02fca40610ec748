// SimDisk: the simulator's implementation of the storage seam (node/core/io.h).
//
// Invariants:
//   - `durable_` holds exactly the effect of every batch with seq <= durable_seq_,
//     applied in seq order; it is what a crash keeps and what load_all() returns.
//   - `pending_` holds the batches submitted but not yet durable, in strictly
//     increasing seq order, all with seq > durable_seq_.
//   - At most one sync is in flight; it covers every batch with seq <= syncing_seq_
//     (group commit: one sync makes all batches submitted before it durable at once).
//   - A crash drops `pending_` and the sync in flight: unsynced writes are lost.
//
// Sequence numbers belong to one process lifetime: after a crash or restart the new
// process may start again from 1, so the disk forgets seq tracking (not data) then.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "node/core/io.h"

namespace caesium::sim {

class SimDisk final : public node::Storage {
 public:
  // Every durable record in key order.  Never fails in the simulator.
  Result<std::vector<node::StoredRecord>> load_all() override;
  // Queues a batch.  A batch whose seq does not increase is a protocol bug of the
  // process: submit() drops it (see submit_checked for the error).
  void submit(node::StorageBatch batch) override { (void)submit_checked(std::move(batch)); }
  uint64_t durable_seq() const override { return durable_seq_; }

  // As submit(), but says why a batch was refused (seq not increasing).
  Status submit_checked(node::StorageBatch batch);

  // True when batches are waiting and no sync is running: the driver should start one.
  bool wants_sync() const { return !pending_.empty() && syncing_seq_ == 0; }
  // Starts a sync of every pending batch; returns the seq it will make durable.
  // REQUIRES: wants_sync().
  uint64_t begin_sync();
  // The sync started by begin_sync() finished: batches <= seq become durable.
  // A completion for a sync that a crash cancelled (seq != the one in flight) is ignored
  // and returns false.
  bool complete_sync(uint64_t seq);

  // A graceful shutdown: every pending batch becomes durable now.
  void flush();
  // The process died: unsynced batches are lost, the sync in flight never completes.
  // Returns how many batches were lost.
  size_t crash();
  // The disk was replaced: nothing survives.
  void wipe();

  size_t record_count() const { return durable_.size(); }
  size_t pending_count() const { return pending_.size(); }
  const std::map<std::string, std::string>& durable_records() const { return durable_; }

 private:
  std::map<std::string, std::string> durable_;
  std::deque<node::StorageBatch> pending_;
  uint64_t durable_seq_ = 0;
  uint64_t last_submitted_seq_ = 0;
  uint64_t syncing_seq_ = 0;  // 0 = no sync in flight
};

}  // namespace caesium::sim
