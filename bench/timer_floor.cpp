// caesium-bench timer-floor, and the cluster benchmark's same-run baseline (timer_floor.h).
#include "bench/timer_floor.h"

#include <sys/resource.h>
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/registry.h"
#include "node/daemon/storage/lmdb_storage.h"
#include "sim/report.h"

namespace caesium::bench {
namespace {

namespace fs = std::filesystem;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t self_cpu_us() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1'000'000 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// One run: the loop, the storage and the bookkeeping of what is durable.
class Floor {
 public:
  Floor(uv_loop_t* loop, int64_t entries, int64_t window_ms) : loop_(loop), entries_(entries), window_ms_(window_ms) {
    uv_timer_init(loop_, &timer_);
    timer_.data = this;
    uv_timer_init(loop_, &guard_);
    guard_.data = this;
  }

  bool open(const std::string& dir, std::string& error) {
    auto env = daemon::LmdbEnv::open(dir);
    if (!env.ok()) {
      failed_ = env.error().message;
      return finish(error);
    }
    storage_ = std::make_unique<daemon::LmdbStorage>(
        loop_, std::move(env).value(), [this](uint64_t seq) { on_durable(seq); },
        [this](const std::string& message) { failed_ = "commit failed: " + message; });
    return true;
  }

  // Writes the entries durably (not timed), then fires them from T0 on; runs the loop
  // until every firing is durable or the guard (window + 30 s) passes.
  bool run(FloorFigures& f, std::string& error) {
    node::StorageBatch load;
    load.seq = ++seq_;
    for (int64_t i = 0; i < entries_; ++i) {
      load.ops.push_back({node::StorageOp::Kind::kPut, "e/" + std::to_string(i), std::string(64, 'x')});
    }
    storage_->submit(std::move(load));
    while (storage_->durable_seq() < seq_ && failed_.empty()) uv_run(loop_, UV_RUN_ONCE);
    if (!failed_.empty()) return finish(error);
    t0_ = now_ms() + 500;
    late_.reserve(static_cast<size_t>(entries_));
    cpu_start_us_ = self_cpu_us();
    arm();
    uv_timer_start(&guard_, [](uv_timer_t* t) { static_cast<Floor*>(t->data)->stop(); },
                   static_cast<uint64_t>(t0_ - now_ms() + window_ms_ + 30'000), 0);
    uv_run(loop_, UV_RUN_DEFAULT);
    f.due = entries_;
    f.fired = static_cast<int64_t>(late_.size());
    f.groups = groups_;
    f.cpu_us_per_occurrence = f.fired > 0 ? static_cast<double>(cpu_end_us_ - cpu_start_us_) / static_cast<double>(f.fired) : 0;
    const double span_s = static_cast<double>(std::max<int64_t>(window_ms_, last_durable_ms_ - t0_)) / 1000.0;
    f.occ_per_s = static_cast<double>(f.fired) / span_s;
    if (!late_.empty()) {
      std::sort(late_.begin(), late_.end());
      f.late_p50 = static_cast<double>(sim::percentile(late_, 50));
      f.late_p99 = static_cast<double>(sim::percentile(late_, 99));
      f.late_max = static_cast<double>(late_.back());
    }
    return finish(error);
  }

 private:
  int64_t due(int64_t i) const { return t0_ + i * window_ms_ / entries_; }

  void arm() {
    if (next_ >= entries_) return;
    const int64_t delay = std::max<int64_t>(0, due(next_) - now_ms());
    uv_timer_start(&timer_, [](uv_timer_t* t) { static_cast<Floor*>(t->data)->fire(); },
                   static_cast<uint64_t>(delay), 0);
  }

  // Everything due by now becomes one storage batch (committed with the others queued in
  // this loop iteration); its firings count when it is durable.
  void fire() {
    const int64_t now = now_ms();
    node::StorageBatch batch;
    batch.seq = ++seq_;
    const int64_t first = next_;
    while (next_ < entries_ && due(next_) <= now) {
      batch.ops.push_back({node::StorageOp::Kind::kPut, "f/" + std::to_string(next_), std::to_string(now)});
      ++next_;
    }
    if (next_ > first) {
      waiting_.push_back({batch.seq, first, next_});
      storage_->submit(std::move(batch));
    }
    arm();
  }

  void on_durable(uint64_t seq) {
    const int64_t now = now_ms();
    bool counted = false;
    while (!waiting_.empty() && waiting_.front().seq <= seq) {
      for (int64_t i = waiting_.front().begin; i < waiting_.front().end; ++i) late_.push_back(now - due(i));
      waiting_.pop_front();
      counted = true;
    }
    if (!counted) return;
    ++groups_;
    last_durable_ms_ = now;
    if (static_cast<int64_t>(late_.size()) == entries_) stop();
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    cpu_end_us_ = self_cpu_us();
    uv_timer_stop(&timer_);
    uv_timer_stop(&guard_);
    uv_stop(loop_);
  }

  // Closes the storage (waiting for a commit in flight) and the timers; also after a
  // failed open.  The loop runs until their close callbacks are done, so the handles are
  // no longer the loop's when this object goes.
  bool finish(std::string& error) {
    if (storage_) {
      bool closed = false;
      storage_->close([&closed] { closed = true; });
      while (!closed) uv_run(loop_, UV_RUN_ONCE);
      storage_.reset();
    }
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&timer_))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&guard_), nullptr);
      uv_run(loop_, UV_RUN_DEFAULT);
    }
    if (!failed_.empty()) {
      error = failed_;
      return false;
    }
    return true;
  }

  struct Waiting {
    uint64_t seq;
    int64_t begin, end;  // entries [begin, end) fired in this batch
  };
  uv_loop_t* loop_;
  const int64_t entries_, window_ms_;
  uv_timer_t timer_{}, guard_{};
  std::unique_ptr<daemon::LmdbStorage> storage_;
  std::deque<Waiting> waiting_;
  std::vector<int64_t> late_;
  std::string failed_;
  uint64_t seq_ = 0;
  int64_t t0_ = 0, next_ = 0, last_durable_ms_ = 0, groups_ = 0;
  int64_t cpu_start_us_ = 0, cpu_end_us_ = 0;
  bool stopped_ = false;
};

}  // namespace

bool run_timer_floor(int64_t entries, int64_t window_ms, const std::string& dir, FloorFigures& out,
                     std::string& error) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  uv_loop_t loop;
  uv_loop_init(&loop);
  bool ok = false;
  {
    Floor floor(&loop, entries, window_ms);
    ok = floor.open(dir, error) && floor.run(out, error);
  }
  const int closed = uv_loop_close(&loop);  // every handle was closed by Floor::finish
  assert(closed == 0);
  (void)closed;
  fs::remove_all(dir, ec);
  return ok;
}

namespace {

int run_floor_bench(const Args& args) {
  const int64_t entries = args.get_int("entries", 100'000);
  const int64_t window_ms = args.get_int("window-ms", 1000);
  if (entries < 1 || window_ms < 1) {
    std::fprintf(stderr, "timer-floor: --entries and --window-ms must be positive\n");
    return 2;
  }
  const std::string dir = args.get("dir", fs::temp_directory_path().string()) + "/caesium-timer-floor-" +
                          std::to_string(::getpid());
  FloorFigures f;
  std::string error;
  if (!run_timer_floor(entries, window_ms, dir, f, error)) {
    std::fprintf(stderr, "timer-floor: %s\n", error.c_str());
    return 1;
  }
  if (args.json) {
    nlohmann::json j{{"benchmark", "timer-floor"}, {"entries", entries}, {"window_ms", window_ms},
                     {"fired", f.fired}, {"occurrences_per_s", f.occ_per_s}, {"lateness_p50_ms", f.late_p50},
                     {"lateness_p99_ms", f.late_p99}, {"lateness_max_ms", f.late_max},
                     {"cpu_us_per_occurrence", f.cpu_us_per_occurrence}, {"commit_groups", f.groups}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("timer-floor: one process, %lld one-shot timers due within %lld ms, each recorded durably "
                "(LMDB group commit, fsync)\n",
                static_cast<long long>(entries), static_cast<long long>(window_ms));
    std::printf("  fired %lld/%lld  %.0f occ/s  lateness p50/p99/max %.0f/%.0f/%.0f ms  CPU %.2f us/occ  "
                "%lld commits\n",
                static_cast<long long>(f.fired), static_cast<long long>(f.due), f.occ_per_s, f.late_p50, f.late_p99,
                f.late_max, f.cpu_us_per_occurrence, static_cast<long long>(f.groups));
  }
  return f.fired == f.due ? 0 : 1;
}

}  // namespace

CAESIUM_BENCH("timer-floor", "the cluster benchmark's baseline: one process fires N durable timers, no replicas",
              run_floor_bench, {"entries", "N", "one-shot timers (default 100000)"},
              {"window-ms", "MS", "due within this window (default 1000)"},
              {"dir", "DIR", "where the LMDB directory goes (default: the temp directory)"});

}  // namespace caesium::bench
