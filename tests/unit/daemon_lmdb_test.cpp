// LMDB storage: batches, reopen, key order (long keys included), group commit and the
// order of durability notifications, map growth, and directories that are not ours.
#include <sodium.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/rng.h"
#include "node/daemon/storage/lmdb_storage.h"
#include "tests/unit/daemon_exec_test_loop.h"
#include "tests/unit/daemon_test_support.h"
#include "tests/unit/test_seed.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::TempDir;
namespace fs = std::filesystem;

namespace {

node::StorageBatch batch(uint64_t seq, std::vector<std::pair<std::string, std::string>> puts,
                         std::vector<std::string> erases = {}) {
  node::StorageBatch b;
  b.seq = seq;
  for (auto& [k, v] : puts) b.ops.push_back({node::StorageOp::Kind::kPut, k, v});
  for (auto& k : erases) b.ops.push_back({node::StorageOp::Kind::kErase, k, {}});
  return b;
}

std::map<std::string, std::string> as_map(const std::vector<node::StoredRecord>& records) {
  std::map<std::string, std::string> m;
  for (const auto& r : records) m[r.key] = r.value;
  return m;
}

bool sorted_by_key(const std::vector<node::StoredRecord>& records) {
  for (size_t i = 1; i < records.size(); ++i) {
    if (!(records[i - 1].key < records[i].key)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("lmdb env: batches apply in order, survive reopen, load in key order") {
  REQUIRE(sodium_init() >= 0);
  TempDir tmp;
  const std::string dir = tmp.sub("data");
  const std::string long_key = "v/main/" + std::string(700, 'k');  // above LMDB's 511-byte key limit
  {
    auto env = LmdbEnv::open(dir);
    REQUIRE(env.ok());
    CHECK((fs::status(dir).permissions() & fs::perms::all) == fs::perms::owner_all);
    auto empty = (*env)->load_all();
    REQUIRE(empty.ok());
    CHECK(empty->empty());
    std::vector<node::StorageBatch> group;
    group.push_back(batch(1, {{"b", "1"}, {"a", "1"}, {long_key, "long"}, {"", "empty key"}}));
    group.push_back(batch(2, {{"b", "2"}, {"\xff" "x", "high byte"}}, {"a"}));
    auto report = (*env)->commit(group);
    REQUIRE(report.ok());
    CHECK(report->ops == 7);
    auto second = (*env)->commit({batch(3, {{"c", "3"}}, {"never-written"})});
    REQUIRE(second.ok());
  }
  auto env = LmdbEnv::open(dir);
  REQUIRE(env.ok());
  auto records = (*env)->load_all();
  REQUIRE(records.ok());
  CHECK(sorted_by_key(*records));
  const auto m = as_map(*records);
  CHECK(m == std::map<std::string, std::string>{
                 {"", "empty key"}, {"b", "2"}, {"c", "3"}, {long_key, "long"}, {"\xff" "x", "high byte"}});
  // Erasing a long key removes it too.
  REQUIRE((*env)->commit({batch(4, {}, {long_key, ""})}).ok());
  auto after = (*env)->load_all();
  REQUIRE(after.ok());
  CHECK(as_map(*after).count(long_key) == 0);
  CHECK(as_map(*after).count("") == 0);
}

TEST_CASE("lmdb env: random batches match a model after reopen") {
  REQUIRE(sodium_init() >= 0);
  const uint64_t seed = test::seed_or(20261121);
  INFO("seed " << seed << " (replay with CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  TempDir tmp;
  std::map<std::string, std::string> model;
  uint64_t seq = 0;
  for (int round = 0; round < 3; ++round) {
    auto env = LmdbEnv::open(tmp.sub("d"));
    REQUIRE(env.ok());
    auto loaded = (*env)->load_all();
    REQUIRE(loaded.ok());
    CHECK(sorted_by_key(*loaded));
    CHECK(as_map(*loaded) == model);
    for (int g = 0; g < 20; ++g) {
      std::vector<node::StorageBatch> group;
      for (int b = 0, nb = static_cast<int>(rng.between(1, 4)); b < nb; ++b) {
        node::StorageBatch sb;
        sb.seq = ++seq;
        for (int o = 0, no = static_cast<int>(rng.between(1, 8)); o < no; ++o) {
          const size_t len = rng.chance(0.1) ? 600 : static_cast<size_t>(rng.between(1, 12));
          std::string key(len, static_cast<char>('a' + rng.below(3)));
          key.back() = static_cast<char>('a' + rng.below(26));
          if (rng.chance(0.3)) {
            sb.ops.push_back({node::StorageOp::Kind::kErase, key, {}});
            model.erase(key);
          } else {
            std::string value = std::to_string(rng.next_u64());
            sb.ops.push_back({node::StorageOp::Kind::kPut, key, value});
            model[key] = value;
          }
        }
        group.push_back(std::move(sb));
      }
      REQUIRE((*env)->commit(group).ok());
    }
  }
}

TEST_CASE("lmdb env: the map grows when full") {
  REQUIRE(sodium_init() >= 0);
  TempDir tmp;
  LmdbOptions o;
  o.initial_map_bytes = 1 << 20;
  o.max_map_bytes = 64 << 20;
  auto env = LmdbEnv::open(tmp.sub("d"), o);
  REQUIRE(env.ok());
  const std::string value(4000, 'v');
  uint64_t resizes = 0;
  for (int g = 0; g < 20; ++g) {
    node::StorageBatch b;
    b.seq = static_cast<uint64_t>(g + 1);
    for (int i = 0; i < 100; ++i) b.ops.push_back({node::StorageOp::Kind::kPut, std::to_string(g * 100 + i), value});
    auto r = (*env)->commit({b});
    REQUIRE(r.ok());
    resizes += r->resizes;
  }
  CHECK(resizes > 0);
  CHECK((*env)->map_bytes() > (uint64_t{1} << 20));
  auto all = (*env)->load_all();
  REQUIRE(all.ok());
  CHECK(all->size() == 2000);
  // A hard ceiling is an error, not a crash.
  LmdbOptions tight;
  tight.initial_map_bytes = tight.max_map_bytes = 1 << 20;
  TempDir tmp2;
  auto small = LmdbEnv::open(tmp2.sub("d"), tight);
  REQUIRE(small.ok());
  node::StorageBatch big;
  big.seq = 1;
  for (int i = 0; i < 1000; ++i) big.ops.push_back({node::StorageOp::Kind::kPut, std::to_string(i), value});
  auto full = (*small)->commit({big});
  REQUIRE_FALSE(full.ok());
  CHECK_THAT(full.error().message, Catch::Contains("full"));
}

TEST_CASE("lmdb env: directories that are not ours are refused with a clear error") {
  TempDir tmp;
  SECTION("garbage data.mdb") {
    fs::create_directory(tmp.sub("g"));
    std::ofstream(tmp.sub("g/data.mdb")) << std::string(64 * 1024, 'x');
    auto env = LmdbEnv::open(tmp.sub("g"));
    REQUIRE_FALSE(env.ok());
    CHECK_THAT(env.error().message, Catch::Contains("not a usable LMDB database"));
  }
  SECTION("short garbage data.mdb") {
    fs::create_directory(tmp.sub("s"));
    std::ofstream(tmp.sub("s/data.mdb")) << "hello";
    auto env = LmdbEnv::open(tmp.sub("s"));
    REQUIRE_FALSE(env.ok());
    CHECK_THAT(env.error().message, Catch::Contains(tmp.sub("s")));
  }
  SECTION("a non-empty directory without data.mdb") {
    fs::create_directory(tmp.sub("home"));
    std::ofstream(tmp.sub("home/notes.txt")) << "mine";
    auto env = LmdbEnv::open(tmp.sub("home"));
    REQUIRE_FALSE(env.ok());
    CHECK_THAT(env.error().message, Catch::Contains("notes.txt"));
    CHECK(!fs::exists(tmp.sub("home/data.mdb")));
  }
  SECTION("a file where the directory should be") {
    std::ofstream(tmp.sub("file")) << "x";
    auto env = LmdbEnv::open(tmp.sub("file"));
    REQUIRE_FALSE(env.ok());
    CHECK_THAT(env.error().message, Catch::Contains("not a directory"));
  }
  SECTION("a directory in use by another environment") {
    auto first = LmdbEnv::open(tmp.sub("busy"));
    REQUIRE(first.ok());
    auto second = LmdbEnv::open(tmp.sub("busy"));
    REQUIRE_FALSE(second.ok());
    CHECK_THAT(second.error().message, Catch::Contains("in use"));
  }
}

TEST_CASE("lmdb storage: group commit on the loop, durable seqs in order") {
  REQUIRE(sodium_init() >= 0);
  TempDir tmp;
  test::TestLoop loop;
  auto env = LmdbEnv::open(tmp.sub("d"));
  REQUIRE(env.ok());
  std::vector<uint64_t> durable;
  std::vector<std::string> errors;
  auto storage = std::make_unique<LmdbStorage>(
      loop.get(), std::move(*env), [&](uint64_t seq) { durable.push_back(seq); },
      [&](const std::string& e) { errors.push_back(e); });
  // Batches submitted in one loop turn form one group; later ones wait for it.
  uint64_t seq = 0;
  for (int i = 0; i < 10; ++i) storage->submit(batch(++seq, {{"k" + std::to_string(i), "v"}}));
  CHECK(storage->durable_seq() == 0);  // nothing is durable before the loop runs
  REQUIRE(loop.run_until([&] { return storage->durable_seq() == 10; }));
  CHECK(storage->metrics().commits == 1);
  CHECK(storage->metrics().batches == 10);
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3; ++i) storage->submit(batch(++seq, {{"r" + std::to_string(round), std::to_string(i)}}));
    if (round % 7 == 0) REQUIRE(loop.run_until([&] { return storage->idle(); }));
  }
  REQUIRE(loop.run_until([&] { return storage->durable_seq() == seq; }));
  CHECK(errors.empty());
  // Notifications are strictly increasing and end at the last seq.
  for (size_t i = 1; i < durable.size(); ++i) CHECK(durable[i - 1] < durable[i]);
  CHECK(durable.back() == seq);
  CHECK(storage->metrics().commits < seq);  // batches were grouped
  CHECK(storage->metrics().commit_latency.count == storage->metrics().commits);
  bool closed = false;
  storage->close([&] { closed = true; });
  REQUIRE(loop.run_until([&] { return closed; }));
  auto reloaded = storage->load_all();
  REQUIRE(reloaded.ok());
  CHECK(reloaded->size() == 60);
  storage.reset();
  CHECK(loop.drain());
}

TEST_CASE("lmdb storage: close commits what is still queued") {
  REQUIRE(sodium_init() >= 0);
  TempDir tmp;
  test::TestLoop loop;
  {
    auto env = LmdbEnv::open(tmp.sub("d"));
    REQUIRE(env.ok());
    LmdbStorage storage(loop.get(), std::move(*env), nullptr, nullptr, /*group_delay_ms=*/50);
    storage.submit(batch(1, {{"x", "1"}}));
    storage.submit(batch(2, {{"y", "2"}}));
    bool closed = false;
    storage.close([&] { closed = true; });
    REQUIRE(loop.run_until([&] { return closed; }));
    CHECK(storage.durable_seq() == 2);
  }
  CHECK(loop.drain());
  auto env = LmdbEnv::open(tmp.sub("d"));
  REQUIRE(env.ok());
  auto records = (*env)->load_all();
  REQUIRE(records.ok());
  CHECK(as_map(*records) == std::map<std::string, std::string>{{"x", "1"}, {"y", "2"}});
}
