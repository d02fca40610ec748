// caesium-bench storage: durable writes through the daemon's LMDB storage with group
// commit, against one fsync per write measured in the same run on the same disk.
//
//   caesium-bench storage [--json] [--puts 50000] [--per-turn 100] [--rate 0]
//                         [--delay-ms 0] [--baseline-ops 2000] [--dir DIR]
//
// Group commit: a single-replica Node core takes `--puts` entry writes through
// Node::put_entry, `--per-turn` per loop iteration, as fast as the loop turns (an API
// burst: the latency is mostly queueing behind earlier groups); or, with `--rate R`,
// R writes per second spread over 1 ms ticks (a steady load: the latency is about
// one commit).  After every put the storage batch is handed to LmdbStorage, exactly as the
// daemon's drain does; batches queued while a commit is in flight form the next group.
// "ack latency" is put_entry -> on_durable for its batch: what an API client or a
// claimant waits for a durable promise.  Baseline: LmdbEnv::commit with one op per
// transaction, serially (one fsync per write).  Figures depend on the disk: the data
// directory is a fresh one under --dir (default: the system temp directory).
#include <sodium.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/registry.h"
#include "node/core/node.h"
#include "node/daemon/storage/lmdb_storage.h"
#include "schedule/entry_json.h"

namespace caesium::bench {
namespace {

using daemon::LmdbEnv;
using daemon::LmdbStorage;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Clock clock_now() {
  const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  return Clock{now_us() / 1000, wall_ms};
}

double percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return static_cast<double>(v[i]);
}

struct Figures {
  uint64_t ops = 0;
  double seconds = 0;
  uint64_t commits = 0;
  uint64_t batches = 0;
  std::vector<int64_t> latency_us;  // per write: ack latency (group) or commit time (baseline)
  double commit_mean_us = 0;
  double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  double commits_per_s() const { return seconds > 0 ? static_cast<double>(commits) / seconds : 0; }
};

std::string fresh_dir(const std::string& base, const std::string& name) {
  const std::string dir = base + "/caesium-storage-bench-" + std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

Figures run_group_commit(const std::string& dir, int64_t puts, int64_t per_turn, int64_t rate, int64_t delay_ms) {
  Figures f;
  auto env = LmdbEnv::open(dir);
  if (!env) {
    std::fprintf(stderr, "caesium-bench storage: %s\n", env.error().message.c_str());
    std::exit(1);
  }
  node::NodeOptions o;
  o.id = "bench";
  o.gossip_addr = "127.0.0.1:1";
  o.stream_addr = "127.0.0.1:2";
  o.initial_config.epoch = 1;
  o.initial_config.volumes.push_back({"main", {"bench"}, {}});
  node::Node node(o, 42);
  if (Status s = node.start({}, clock_now()); !s.ok()) {
    std::fprintf(stderr, "caesium-bench storage: %s\n", s.error().message.c_str());
    std::exit(1);
  }
  const auto fields = nlohmann::json{{"cron", "0 0 1 1 *"}, {"handler", "noop"}};

  uv_loop_t loop;
  uv_loop_init(&loop);
  std::deque<std::pair<uint64_t, int64_t>> waiting;  // (batch seq, put time) in seq order
  int64_t issued = 0;
  auto drain = [&] {
    node::StorageBatch b;
    node::Transmit t;
    node::NodeEvent e;
    node::Invocation inv;
    while (node.poll_transmit(t)) {}
    while (node.poll_event(e)) {}
    while (node.poll_invocation(inv)) {}
    return node.poll_storage(b) ? std::optional<node::StorageBatch>(std::move(b)) : std::nullopt;
  };
  LmdbStorage* storage_ptr = nullptr;
  LmdbStorage storage(
      &loop, std::move(*env),
      [&](uint64_t seq) {
        const int64_t t = now_us();
        while (!waiting.empty() && waiting.front().first <= seq) {
          f.latency_us.push_back(t - waiting.front().second);
          waiting.pop_front();
        }
        node.on_durable(seq, clock_now());
        while (auto b = drain()) storage_ptr->submit(std::move(*b));
      },
      [](const std::string& m) { std::fprintf(stderr, "caesium-bench storage: %s\n", m.c_str()); }, delay_ms);
  storage_ptr = &storage;
  while (auto b = drain()) storage.submit(std::move(*b));  // the node's own start records

  struct Ctx {
    std::function<void()> turn;
  } ctx;
  uv_idle_t idle;
  uv_idle_init(&loop, &idle);
  idle.data = &ctx;
  uv_timer_t pace;
  uv_timer_init(&loop, &pace);
  pace.data = &ctx;
  const int64_t start_us = now_us();
  ctx.turn = [&] {
    // Paced: as many as the rate allows by now; burst: per_turn.
    const int64_t quota = rate > 0 ? (now_us() - start_us) * rate / 1'000'000 - issued : per_turn;
    for (int64_t k = 0; k < quota && issued < puts; ++k, ++issued) {
      const Clock c = clock_now();
      auto entry = schedule::entry_from_json(fields, "e" + std::to_string(issued % 1000), "n" + std::to_string(issued),
                                             c.utc_ms, "bench");
      auto ack = node.put_entry("main", *entry, c);
      if (!ack) {
        std::fprintf(stderr, "caesium-bench storage: put failed: %s\n", ack.error().message.c_str());
        std::exit(1);
      }
      const int64_t t = now_us();
      while (auto b = drain()) {
        waiting.emplace_back(b->seq, t);
        storage.submit(std::move(*b));
      }
    }
    if (issued >= puts) {
      uv_idle_stop(&idle);
      uv_timer_stop(&pace);
    }
  };
  if (rate > 0) {
    uv_timer_start(&pace, [](uv_timer_t* h) { static_cast<Ctx*>(h->data)->turn(); }, 1, 1);
  } else {
    uv_idle_start(&idle, [](uv_idle_t* h) { static_cast<Ctx*>(h->data)->turn(); });
  }
  while (issued < puts || !waiting.empty() || !storage.idle()) uv_run(&loop, UV_RUN_ONCE);
  f.seconds = static_cast<double>(now_us() - start_us) / 1e6;
  f.ops = static_cast<uint64_t>(puts);
  f.commits = storage.metrics().commits;
  f.batches = storage.metrics().batches;
  const auto& h = storage.metrics().commit_latency;
  f.commit_mean_us = h.count > 0 ? static_cast<double>(h.sum_us) / static_cast<double>(h.count) : 0;
  bool closed = false;
  storage.close([&] { closed = true; });
  uv_close(reinterpret_cast<uv_handle_t*>(&idle), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&pace), nullptr);
  while (!closed) uv_run(&loop, UV_RUN_ONCE);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return f;
}

Figures run_baseline(const std::string& dir, int64_t ops) {
  Figures f;
  auto env = LmdbEnv::open(dir);
  if (!env) {
    std::fprintf(stderr, "caesium-bench storage: %s\n", env.error().message.c_str());
    std::exit(1);
  }
  const std::string value(200, 'v');  // about the size of an encoded entry record
  const int64_t start_us = now_us();
  for (int64_t i = 0; i < ops; ++i) {
    node::StorageBatch b;
    b.seq = static_cast<uint64_t>(i + 1);
    b.ops.push_back({node::StorageOp::Kind::kPut, "v/main/e/caesium/schedule/n" + std::to_string(i), value});
    auto r = (*env)->commit({b});
    if (!r) {
      std::fprintf(stderr, "caesium-bench storage: %s\n", r.error().message.c_str());
      std::exit(1);
    }
    f.latency_us.push_back(r->latency_us);
  }
  f.seconds = static_cast<double>(now_us() - start_us) / 1e6;
  f.ops = f.commits = f.batches = static_cast<uint64_t>(ops);
  return f;
}

int run_storage(const Args& args) {
  if (sodium_init() < 0) return 1;
  const int64_t puts = args.get_int("puts", 50'000);
  const int64_t per_turn = args.get_int("per-turn", 100);
  const int64_t rate = args.get_int("rate", 0);
  const int64_t delay_ms = args.get_int("delay-ms", 0);
  const int64_t baseline_ops = args.get_int("baseline-ops", 2'000);
  const std::string base = args.get("dir", std::filesystem::temp_directory_path().string());
  if (puts < 1 || per_turn < 1 || delay_ms < 0 || baseline_ops < 1 || rate < 0) {
    std::fprintf(stderr,
                 "caesium-bench storage: --puts, --per-turn, --baseline-ops must be >= 1, --delay-ms and --rate >= 0\n");
    return 2;
  }
  const std::string gdir = fresh_dir(base, "group");
  const std::string bdir = fresh_dir(base, "baseline");
  const Figures g = run_group_commit(gdir, puts, per_turn, rate, delay_ms);
  const Figures b = run_baseline(bdir, baseline_ops);
  std::filesystem::remove_all(gdir);
  std::filesystem::remove_all(bdir);
  const double speedup = b.ops_per_s() > 0 ? g.ops_per_s() / b.ops_per_s() : 0;
  if (args.json) {
    nlohmann::json j = {
        {"benchmark", "storage"},
        {"dir", base},
        {"group_commit",
         {{"puts", g.ops},
          {"per_turn", per_turn},
          {"rate", rate},
          {"delay_ms", delay_ms},
          {"seconds", g.seconds},
          {"ops_per_s", g.ops_per_s()},
          {"commits", g.commits},
          {"commits_per_s", g.commits_per_s()},
          {"batches_per_commit", g.commits ? static_cast<double>(g.batches) / static_cast<double>(g.commits) : 0},
          {"commit_mean_us", g.commit_mean_us},
          {"ack_p50_us", percentile(g.latency_us, 0.50)},
          {"ack_p99_us", percentile(g.latency_us, 0.99)}}},
        {"baseline_fsync_per_op",
         {{"ops", b.ops},
          {"ops_per_s", b.ops_per_s()},
          {"commit_p50_us", percentile(b.latency_us, 0.50)},
          {"commit_p99_us", percentile(b.latency_us, 0.99)}}},
        {"speedup_ops_per_s", speedup}};
    std::puts(j.dump().c_str());
    return 0;
  }
  std::printf("storage: durable writes in %s (LMDB, fsync per commit)\n\n", base.c_str());
  std::printf("%-34s %12s %12s %14s %12s %12s\n", "", "writes/s", "commits/s", "writes/commit", "p50", "p99");
  std::printf("%-34s %12.0f %12.0f %14.1f %10.2fms %10.2fms\n", "group commit (put_entry -> ack)", g.ops_per_s(),
              g.commits_per_s(), g.commits ? static_cast<double>(g.batches) / static_cast<double>(g.commits) : 0,
              percentile(g.latency_us, 0.50) / 1000, percentile(g.latency_us, 0.99) / 1000);
  std::printf("%-34s %12.0f %12.0f %14.1f %10.2fms %10.2fms\n", "baseline: one fsync per write", b.ops_per_s(),
              b.commits_per_s(), 1.0, percentile(b.latency_us, 0.50) / 1000, percentile(b.latency_us, 0.99) / 1000);
  const std::string load = rate > 0 ? std::to_string(rate) + " per second" : std::to_string(per_turn) + " per loop turn";
  std::printf("\ngroup commit: %llu puts, %s, delay %lld ms, mean commit %.2f ms; %.1fx the writes/s of the baseline\n",
              static_cast<unsigned long long>(g.ops), load.c_str(), static_cast<long long>(delay_ms),
              g.commit_mean_us / 1000, speedup);
  return 0;
}

}  // namespace

CAESIUM_BENCH("storage", "LMDB group commit through the Node core vs one fsync per write", run_storage,
              {"puts", "N", "writes through the Node core (default 50000)"},
              {"per-turn", "N", "writes per loop turn (default 100)"},
              {"rate", "N", "writes per second, 0 = as fast as possible (default 0)"},
              {"delay-ms", "MS", "added commit latency (default 0)"},
              {"baseline-ops", "N", "writes for the fsync-per-write baseline (default 2000)"},
              {"dir", "DIR", "where the LMDB files go (default: the temp directory)"});

}  // namespace caesium::bench
