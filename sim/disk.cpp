#include "sim/disk.h"

#include <cassert>
#include <utility>

namespace caesium::sim {

Result<std::vector<node::StoredRecord>> SimDisk::load_all() {
  std::vector<node::StoredRecord> out;
  out.reserve(durable_.size());
  for (const auto& [key, value] : durable_) out.push_back({key, value});
  return out;
}

Status SimDisk::submit_checked(node::StorageBatch batch) {
  if (batch.seq <= last_submitted_seq_) {
    return Error("storage batch seq " + std::to_string(batch.seq) +
                     " does not increase (last was " + std::to_string(last_submitted_seq_) + ")",
                 "seq");
  }
  last_submitted_seq_ = batch.seq;
  pending_.push_back(std::move(batch));
  return Status::success();
}

uint64_t SimDisk::begin_sync() {
  assert(wants_sync());
  syncing_seq_ = pending_.back().seq;
  return syncing_seq_;
}

bool SimDisk::complete_sync(uint64_t seq) {
  if (syncing_seq_ == 0 || seq != syncing_seq_) return false;
  while (!pending_.empty() && pending_.front().seq <= seq) {
    for (auto& op : pending_.front().ops) {
      if (op.kind == node::StorageOp::Kind::kPut) {
        durable_[op.key] = std::move(op.value);
      } else {
        durable_.erase(op.key);
      }
    }
    pending_.pop_front();
  }
  durable_seq_ = seq;
  syncing_seq_ = 0;
  return true;
}

void SimDisk::flush() {
  if (pending_.empty()) return;
  syncing_seq_ = pending_.back().seq;
  complete_sync(syncing_seq_);
}

size_t SimDisk::crash() {
  const size_t lost = pending_.size();
  pending_.clear();
  syncing_seq_ = 0;
  durable_seq_ = 0;
  last_submitted_seq_ = 0;
  return lost;
}

void SimDisk::wipe() {
  crash();
  durable_.clear();
}

}  // namespace caesium::sim
