// The daemon's storage: one LMDB environment under data_dir behind node::Storage, with
// group commit off the loop thread.
//
// Layout.  Records live in LMDB's main database under the core's own keys.  LMDB keys
// are at most 511 bytes, but core keys (volume records of long entity/entry names,
// entity state) may be longer, so a key that is longer than kMaxDirectKeyBytes, empty,
// or starts with 0xFF is stored under "\xFF\xFFlong/" + BLAKE2b-256(key) with the full
// key inside the value (varint length, key, value).  load_all() decodes both forms and
// returns records in key order.
//
// Durability.  `submit` only queues a batch.  At the end of each loop iteration (a
// uv_check handle, plus a uv_prepare for batches queued by timers before the loop
// blocks) every queued batch is committed as one group: one write transaction, one
// fsync (LMDB's default sync mode; MDB_NOSYNC is never set), run on the libuv thread
// pool so the loop keeps serving while it syncs.  Only one group is in flight at a
// time, so groups commit in seq order; batches queued meanwhile form the next group.
// When a group is durable, `durable_seq` becomes its last seq and `on_durable(seq)` is
// called on the loop thread.  A failed commit is reported through `on_error`, and the
// group is retried after a second (its promises stay held: nothing behind a barrier is
// released before the batch is durable).
//
// Map size.  The map starts at `initial_map_bytes` (virtual address space; the file
// grows only as pages are written) and doubles on MDB_MAP_FULL up to `max_map_bytes`.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "node/core/io.h"
#include "node/daemon/metrics/runtime_metrics.h"

struct uv_loop_s;

namespace caesium::daemon {

inline constexpr size_t kMaxDirectKeyBytes = 480;

struct LmdbOptions {
  uint64_t initial_map_bytes = uint64_t{256} << 20;
  uint64_t max_map_bytes = uint64_t{64} << 30;
};

// The synchronous part: opening, loading, committing one group.  Thread-compatible:
// `commit` may run on any thread, one call at a time, and never concurrently with
// `load_all`.
class LmdbEnv {
 public:
  // Opens (creating with mode 0700 when missing) the data directory `dir`.  Errors, with
  // a message naming the directory: a path that is not a directory; a non-empty
  // directory without data.mdb (not ours: refused rather than written into); a data.mdb
  // that is not an LMDB file (corrupt or foreign); a directory locked by another process.
  static Result<std::unique_ptr<LmdbEnv>> open(const std::string& dir, const LmdbOptions& options = {});
  ~LmdbEnv();
  LmdbEnv(const LmdbEnv&) = delete;
  LmdbEnv& operator=(const LmdbEnv&) = delete;

  // Every record in key order.  A record that cannot be decoded is an Error.
  Result<std::vector<node::StoredRecord>> load_all() const;

  struct CommitReport {
    int64_t latency_us = 0;
    uint64_t ops = 0;
    uint64_t bytes = 0;
    uint64_t resizes = 0;
  };
  // Applies `batches` in order in one write transaction and syncs it to disk.
  // On error nothing of the group is applied.
  Result<CommitReport> commit(const std::vector<node::StorageBatch>& batches);

  uint64_t map_bytes() const { return map_bytes_; }
  const std::string& dir() const { return dir_; }

 private:
  LmdbEnv() = default;
  Status write_group(const std::vector<node::StorageBatch>& batches, CommitReport& report);

  struct Handles;
  std::unique_ptr<Handles> h_;
  std::string dir_;
  LmdbOptions options_;
  uint64_t map_bytes_ = 0;
  int lock_fd_ = -1;
};

// The LMDB key a core key is stored under (see Layout above).  Exposed for tests.
std::string lmdb_key_for(const std::string& key);

class LmdbStorage final : public node::Storage {
 public:
  using DurableFn = std::function<void(uint64_t seq)>;
  using ErrorFn = std::function<void(const std::string& message)>;

  // `group_delay_ms` > 0 holds a group open that long after its first batch when no
  // commit is in flight (more batches per fsync, more latency); 0 commits at the end of
  // the loop iteration.
  LmdbStorage(uv_loop_s* loop, std::unique_ptr<LmdbEnv> env, DurableFn on_durable, ErrorFn on_error,
              int64_t group_delay_ms = 0);
  // REQUIRES: closed (close() completed) or the loop never ran a commit.
  ~LmdbStorage() override;

  Result<std::vector<node::StoredRecord>> load_all() override { return env_->load_all(); }
  void submit(node::StorageBatch batch) override;
  uint64_t durable_seq() const override { return durable_seq_; }

  // Nothing queued and nothing in flight.
  bool idle() const { return pending_.empty() && !in_flight_; }
  // Commits whatever is queued now (without waiting for the end of the iteration).
  void flush();
  // Stops accepting work, waits for the queued groups to commit, closes the handles,
  // then calls `done` on the loop thread.
  void close(std::function<void()> done);

  const StorageMetrics& metrics() const { return metrics_; }
  const LmdbEnv& env() const { return *env_; }

 private:
  struct Work;
  struct Handles;
  void kick();
  void start_commit();
  void on_commit_done(Work& work, int status);
  void maybe_finish_close();
  void close_handles(Handles* h);
  void update_ref();
  void start_timer(int64_t delay_ms);

  uv_loop_s* loop_;
  std::unique_ptr<LmdbEnv> env_;
  DurableFn on_durable_;
  ErrorFn on_error_;
  int64_t group_delay_ms_;

  std::unique_ptr<Handles> h_;
  std::vector<node::StorageBatch> pending_;
  bool in_flight_ = false;
  bool retry_wait_ = false;
  bool delay_wait_ = false;
  bool closing_ = false;
  bool handles_closing_ = false;
  int close_failures_ = 0;
  std::function<void()> close_done_;
  uint64_t durable_seq_ = 0;
  StorageMetrics metrics_;
};

}  // namespace caesium::daemon
