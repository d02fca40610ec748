#include "node/daemon/storage/lmdb_storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <lmdb.h>
#include <sodium.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/bytes.h"

namespace caesium::daemon {
namespace {

constexpr std::string_view kLongPrefix = "\xFF\xFFlong/";
constexpr int64_t kRetryDelayMs = 1'000;
constexpr int kMaxCloseFailures = 3;

std::string errno_text(int err) { return std::strerror(err); }

bool needs_long_form(const std::string& key) {
  return key.empty() || key.size() > kMaxDirectKeyBytes || static_cast<unsigned char>(key[0]) == 0xFF;
}

// mkdir -p; the last component gets `mode`, parents the default 0755.
Status make_dirs(const std::string& dir, mode_t mode) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), pos == dir.size() ? mode : 0755) != 0 && errno != EEXIST) {
      return Error("cannot create data directory " + part + ": " + errno_text(errno));
    }
  }
  return Status::success();
}

// A data directory we may use: new, empty, or holding an LMDB data file.  Anything else
// (someone's home directory, a typo pointing at /etc) is refused rather than written into.
Status check_directory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Error("cannot access data directory " + dir + ": " + errno_text(errno));
    return make_dirs(dir, 0700);
  }
  if (!S_ISDIR(st.st_mode)) return Error("data_dir " + dir + " exists and is not a directory");
  if (::access((dir + "/data.mdb").c_str(), F_OK) == 0) return Status::success();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Error("cannot read data directory " + dir + ": " + errno_text(errno));
  std::string stranger;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == "lock.mdb" || name == "caesium.lock") continue;
    stranger = name;
    break;
  }
  ::closedir(d);
  if (!stranger.empty()) {
    return Error("data directory " + dir + " is not empty (it holds '" + stranger +
                 "') and has no data.mdb, so it is not a Caesium data directory; refusing to write into it "
                 "(point data_dir at a new or empty directory)");
  }
  return Status::success();
}

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

MDB_val as_val(const std::string& s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

}  // namespace

std::string lmdb_key_for(const std::string& key) {
  if (!needs_long_form(key)) return key;
  unsigned char digest[32];
  crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char*>(key.data()), key.size(), nullptr,
                     0);
  std::string out(kLongPrefix);
  out.append(reinterpret_cast<const char*>(digest), sizeof digest);
  return out;
}

// --- LmdbEnv -----------------------------------------------------------------------------

struct LmdbEnv::Handles {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
};

Result<std::unique_ptr<LmdbEnv>> LmdbEnv::open(const std::string& dir, const LmdbOptions& options) {
  if (dir.empty()) return Error("data_dir is empty");
  if (Status s = check_directory(dir); !s.ok()) return s.error();
  std::unique_ptr<LmdbEnv> self(new LmdbEnv());
  self->dir_ = dir;
  self->options_ = options;
  self->h_ = std::make_unique<Handles>();

  // LMDB itself allows several processes in one environment; two nodes sharing a
  // directory would corrupt each other's promises, so one process holds it.
  const std::string lock_path = dir + "/caesium.lock";
  self->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (self->lock_fd_ < 0) return Error("cannot create " + lock_path + ": " + errno_text(errno));
  if (::flock(self->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Error("data directory " + dir + " is in use by another process (" + lock_path + " is locked)");
  }

  int rc = mdb_env_create(&self->h_->env);
  if (rc != 0) return Error(std::string("cannot create an LMDB environment: ") + mdb_strerror(rc));
  rc = mdb_env_set_mapsize(self->h_->env, options.initial_map_bytes);
  if (rc == 0) rc = mdb_env_open(self->h_->env, dir.c_str(), MDB_NOTLS, 0600);
  if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED) {
    return Error("data directory " + dir + ": data.mdb is not a usable LMDB database (" + mdb_strerror(rc) +
                 "); it is corrupt or belongs to something else. Move it away to start this node empty "
                 "(it will resync from its peers)");
  }
  if (rc != 0) return Error("cannot open the LMDB environment in " + dir + ": " + mdb_strerror(rc));
  MDB_txn* txn = nullptr;
  rc = mdb_txn_begin(self->h_->env, nullptr, 0, &txn);
  if (rc == 0) rc = mdb_dbi_open(txn, nullptr, 0, &self->h_->dbi);
  if (rc == 0) {
    rc = mdb_txn_commit(txn);
  } else if (txn != nullptr) {
    mdb_txn_abort(txn);
  }
  if (rc != 0) return Error("cannot open the LMDB database in " + dir + ": " + mdb_strerror(rc));
  MDB_envinfo info{};
  mdb_env_info(self->h_->env, &info);
  self->map_bytes_ = info.me_mapsize;
  return self;
}

LmdbEnv::~LmdbEnv() {
  if (h_ && h_->env != nullptr) mdb_env_close(h_->env);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Result<std::vector<node::StoredRecord>> LmdbEnv::load_all() const {
  std::vector<node::StoredRecord> out;
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(h_->env, nullptr, MDB_RDONLY, &txn);
  if (rc != 0) return Error("cannot read " + dir_ + ": " + mdb_strerror(rc));
  MDB_cursor* cur = nullptr;
  rc = mdb_cursor_open(txn, h_->dbi, &cur);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return Error("cannot read " + dir_ + ": " + mdb_strerror(rc));
  }
  bool sort_needed = false;
  std::string error;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    std::string key(static_cast<const char*>(k.mv_data), k.mv_size);
    std::string_view value(static_cast<const char*>(v.mv_data), v.mv_size);
    if (key.rfind(kLongPrefix, 0) != 0) {
      out.push_back({std::move(key), std::string(value)});
      continue;
    }
    ByteReader r(value);
    node::StoredRecord rec;
    rec.key = r.str(size_t{1} << 31);
    rec.value = r.str(size_t{1} << 31);
    if (!r.done() || lmdb_key_for(rec.key) != key) {
      error = "data directory " + dir_ + " holds a corrupt long-key record";
      break;
    }
    out.push_back(std::move(rec));
    sort_needed = true;
  }
  mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  if (!error.empty()) return Error(error);
  if (rc != MDB_NOTFOUND) return Error("cannot read " + dir_ + " (corrupt?): " + mdb_strerror(rc));
  if (sort_needed) {
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  }
  return out;
}

Status LmdbEnv::write_group(const std::vector<node::StorageBatch>& batches, CommitReport& report) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(h_->env, nullptr, 0, &txn);
  if (rc != 0) return Error(mdb_strerror(rc), std::to_string(rc));
  report.ops = 0;
  report.bytes = 0;
  for (const auto& batch : batches) {
    for (const auto& op : batch.ops) {
      const std::string lkey = lmdb_key_for(op.key);
      MDB_val k = as_val(lkey);
      if (op.kind == node::StorageOp::Kind::kErase) {
        rc = mdb_del(txn, h_->dbi, &k, nullptr);
        if (rc == MDB_NOTFOUND) rc = 0;
      } else if (lkey.size() == op.key.size()) {
        MDB_val v = as_val(op.value);
        rc = mdb_put(txn, h_->dbi, &k, &v, 0);
      } else {
        ByteWriter w;
        w.str(op.key);
        w.str(op.value);
        MDB_val v = as_val(w.data());
        rc = mdb_put(txn, h_->dbi, &k, &v, 0);
      }
      if (rc != 0) {
        mdb_txn_abort(txn);
        return Error(mdb_strerror(rc), std::to_string(rc));
      }
      ++report.ops;
      report.bytes += op.key.size() + op.value.size();
    }
  }
  rc = mdb_txn_commit(txn);  // writes the pages and syncs (fdatasync)
  if (rc != 0) return Error(mdb_strerror(rc), std::to_string(rc));
  return Status::success();
}

Result<LmdbEnv::CommitReport> LmdbEnv::commit(const std::vector<node::StorageBatch>& batches) {
  CommitReport report;
  const int64_t start_us = steady_us();
  for (;;) {
    Status s = write_group(batches, report);
    if (s.ok()) break;
    if (s.error().field != std::to_string(MDB_MAP_FULL)) {
      return Error("LMDB commit in " + dir_ + " failed: " + s.error().message);
    }
    // No transaction of ours is open here (the failed one was aborted), which is what
    // mdb_env_set_mapsize requires.
    const uint64_t next = map_bytes_ * 2;
    if (next > options_.max_map_bytes) {
      return Error("LMDB map in " + dir_ + " is full at " + std::to_string(map_bytes_ >> 20) +
                   " MiB (storage.max_map_size)");
    }
    const int rc = mdb_env_set_mapsize(h_->env, next);
    if (rc != 0) return Error("cannot grow the LMDB map in " + dir_ + ": " + mdb_strerror(rc));
    map_bytes_ = next;
    ++report.resizes;
  }
  report.latency_us = steady_us() - start_us;
  return report;
}

// --- LmdbStorage ----------------------------------------------------------------------------

// The uv handles live apart from the storage so that they can finish closing after it.
struct LmdbStorage::Handles {
  uv_prepare_t prepare{};
  uv_check_t check{};
  uv_timer_t timer{};
  LmdbStorage* owner = nullptr;
  int open = 0;
};

struct LmdbStorage::Work {
  uv_work_t req{};
  LmdbStorage* self = nullptr;
  std::vector<node::StorageBatch> group;
  Result<LmdbEnv::CommitReport> result = Error("not run");
};

LmdbStorage::LmdbStorage(uv_loop_s* loop, std::unique_ptr<LmdbEnv> env, DurableFn on_durable, ErrorFn on_error,
                         int64_t group_delay_ms)
    : loop_(loop),
      env_(std::move(env)),
      on_durable_(std::move(on_durable)),
      on_error_(std::move(on_error)),
      group_delay_ms_(group_delay_ms),
      h_(std::make_unique<Handles>()) {
  h_->owner = this;
  uv_prepare_init(loop_, &h_->prepare);
  uv_check_init(loop_, &h_->check);
  uv_timer_init(loop_, &h_->timer);
  h_->prepare.data = h_->check.data = h_->timer.data = h_.get();
  h_->open = 3;
  uv_prepare_start(&h_->prepare, +[](uv_prepare_t* p) {
    auto* h = static_cast<Handles*>(p->data);
    if (h->owner != nullptr) h->owner->kick();
  });
  uv_check_start(&h_->check, +[](uv_check_t* c) {
    auto* h = static_cast<Handles*>(c->data);
    if (h->owner != nullptr) h->owner->kick();
  });
  update_ref();
  metrics_.map_bytes = env_->map_bytes();
}

// The commit hooks keep the loop alive only while batches wait: queued work must get
// its turn, an idle storage must not hold the loop open.
void LmdbStorage::update_ref() {
  if (!h_ || handles_closing_) return;
  auto* p = reinterpret_cast<uv_handle_t*>(&h_->prepare);
  auto* c = reinterpret_cast<uv_handle_t*>(&h_->check);
  if (pending_.empty()) {
    uv_unref(p);
    uv_unref(c);
  } else {
    uv_ref(p);
    uv_ref(c);
  }
}

LmdbStorage::~LmdbStorage() {
  assert(!in_flight_);
  if (!h_) return;  // close() completed
  // The handles' memory is released by their last close callback, after this object
  // is gone.
  Handles* h = h_.release();
  h->owner = nullptr;
  if (!handles_closing_) close_handles(h);
}

void LmdbStorage::close_handles(Handles* h) {
  handles_closing_ = true;
  auto on_closed = [](uv_handle_t* handle) {
    auto* hh = static_cast<Handles*>(handle->data);
    if (--hh->open > 0) return;
    LmdbStorage* owner = hh->owner;
    if (owner == nullptr) {
      delete hh;
      return;
    }
    owner->h_.reset();
    auto done = std::move(owner->close_done_);
    owner->close_done_ = nullptr;
    if (done) done();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&h->prepare), on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->check), on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
}

void LmdbStorage::submit(node::StorageBatch batch) {
  pending_.push_back(std::move(batch));
  if (pending_.size() == 1) update_ref();
}

// Called at the end of every loop iteration (and before the loop blocks).
void LmdbStorage::kick() {
  if (in_flight_ || retry_wait_ || pending_.empty()) return;
  if (group_delay_ms_ > 0 && !closing_) {
    if (delay_wait_) return;
    delay_wait_ = true;
    start_timer(group_delay_ms_);
    return;
  }
  start_commit();
}

// One timer serves both waits (a group held open, a retry after a failure); they never
// overlap.  When it fires the queued batches are committed.
void LmdbStorage::start_timer(int64_t delay_ms) {
  uv_timer_start(&h_->timer, +[](uv_timer_t* t) {
    auto* h = static_cast<Handles*>(t->data);
    if (h->owner == nullptr) return;
    h->owner->retry_wait_ = false;
    h->owner->delay_wait_ = false;
    h->owner->flush();
    h->owner->maybe_finish_close();
  }, static_cast<uint64_t>(delay_ms), 0);
}

void LmdbStorage::flush() {
  if (in_flight_ || retry_wait_ || pending_.empty()) return;
  if (delay_wait_) {
    uv_timer_stop(&h_->timer);
    delay_wait_ = false;
  }
  start_commit();
}

void LmdbStorage::start_commit() {
  assert(!in_flight_);
  assert(!pending_.empty());
  auto* work = new Work();
  work->self = this;
  work->group = std::move(pending_);
  pending_.clear();
  update_ref();
  work->req.data = work;
  in_flight_ = true;
  const int rc = uv_queue_work(
      loop_, &work->req,
      [](uv_work_t* req) {
        auto* w = static_cast<Work*>(req->data);
        w->result = w->self->env_->commit(w->group);
      },
      [](uv_work_t* req, int status) {
        auto* w = static_cast<Work*>(req->data);
        w->self->on_commit_done(*w, status);
        delete w;
      });
  if (rc != 0) {
    // Cannot happen with a live loop; keep the group and retry like a failed commit.
    work->result = Error(std::string("cannot queue the commit: ") + uv_strerror(rc));
    on_commit_done(*work, 0);
    delete work;
  }
}

void LmdbStorage::on_commit_done(Work& work, int status) {
  in_flight_ = false;
  if (status == 0 && work.result.ok()) {
    const auto& r = *work.result;
    ++metrics_.commits;
    metrics_.batches += work.group.size();
    metrics_.ops += r.ops;
    metrics_.bytes += r.bytes;
    metrics_.map_resizes += r.resizes;
    metrics_.map_bytes = env_->map_bytes();
    metrics_.max_group_batches = std::max<uint64_t>(metrics_.max_group_batches, work.group.size());
    metrics_.commit_latency.observe(r.latency_us);
    durable_seq_ = work.group.back().seq;
    if (on_durable_) on_durable_(durable_seq_);
  } else {
    ++metrics_.failures;
    const std::string why = status != 0 ? uv_strerror(status) : work.result.error().message;
    if (closing_ && ++close_failures_ >= kMaxCloseFailures) {
      if (on_error_) on_error_(why + "; giving up at shutdown: " + std::to_string(work.group.size()) +
                               " batches were not made durable");
      pending_.clear();
    } else {
      if (on_error_) on_error_(why + "; retrying in 1 s (promises stay held until it succeeds)");
      // Keep seq order: the failed group goes back in front of anything queued since.
      work.group.insert(work.group.end(), std::make_move_iterator(pending_.begin()),
                        std::make_move_iterator(pending_.end()));
      pending_ = std::move(work.group);
      update_ref();
      retry_wait_ = true;
      start_timer(kRetryDelayMs);
    }
  }
  maybe_finish_close();
}

void LmdbStorage::close(std::function<void()> done) {
  closing_ = true;
  close_done_ = std::move(done);
  flush();
  maybe_finish_close();
}

void LmdbStorage::maybe_finish_close() {
  if (!closing_ || !close_done_) return;
  if (!pending_.empty() && !in_flight_ && !retry_wait_) flush();
  if (!idle() || retry_wait_ || handles_closing_) return;
  close_handles(h_.get());
}

}  // namespace caesium::daemon
