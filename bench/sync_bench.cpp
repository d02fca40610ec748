// caesium-bench sync: what one anti-entropy session costs, in bytes and round trips, for
// d differences among n records, against a naive full exchange measured on the same stores.
//
//   caesium-bench sync [--json] [--sizes 10000,1000000] [--diffs 0,1,10,100,1000] [--repeat 50] [--seed N]
//
// Two stores get the same n records, then d differences of every kind (missing on either
// side, newer on either side, deleted on either side); one session runs between them
// through an in-process loop, and must leave them with equal digests.  The next d starts
// from the converged pair.  Then `repeat` more sessions with d = 10 each report their
// worst round trips and bytes.  Bytes are wire_size() estimates (gossip/sync_messages.h).
//
// Baseline (modelled from the same run, not a second protocol): the initiator sends every
// (key hash, fingerprint) it holds — 12 bytes per record — and then the same records
// move as in the session.  That is the least a protocol without a tree can send.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.h"
#include "bench/registry.h"
#include "gossip/anti_entropy.h"

namespace caesium::bench {
namespace {

using gossip::SyncMessage;
using gossip::SyncSession;
using schedule::Record;
using schedule::Version;
using schedule::VolumeStore;

constexpr int64_t kNow = 1'700'000'000'000;
const std::string kOrigins[3] = {"n0", "n1", "n2"};

// REQUIRES: `text` is a list of whole numbers (the parser checked it).
std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

Record make_record(uint64_t i, int64_t physical_ms, const std::string& origin, bool tombstone) {
  // snprintf rather than string concatenation: GCC 12 -O3 warns falsely (-Wrestrict) on the latter.
  char key[80];
  std::snprintf(key, sizeof key, "e%llu/caesium/schedule/entry-%llu", static_cast<unsigned long long>(i % 1000),
                static_cast<unsigned long long>(i));
  Record r{key, std::nullopt, Version{physical_ms, 0, origin}};
  if (!tombstone) {
    char value[80];
    std::snprintf(value, sizeof value, "{\"cron\":\"*/5 * * * *\",\"v\":%lld}", static_cast<long long>(physical_ms % 1000));
    r.value = value;
  }
  return r;
}

void add_differences(Rng& rng, VolumeStore& a, VolumeStore& b, uint64_t n, uint64_t* next_key, uint64_t d) {
  for (uint64_t k = 0; k < d; ++k) {
    const uint64_t existing = rng.below(n);
    const int64_t t = kNow + static_cast<int64_t>(rng.below(1000));
    switch (k % 6) {
      case 0: (void)a.merge(make_record((*next_key)++, t, "n1", false), kNow); break;
      case 1: (void)b.merge(make_record((*next_key)++, t, "n2", false), kNow); break;
      case 2: (void)a.merge(make_record(existing, t, "n1", false), kNow); break;
      case 3: (void)b.merge(make_record(existing, t, "n2", false), kNow); break;
      case 4: (void)a.merge(make_record(existing, t, "n1", true), kNow); break;
      default: (void)b.merge(make_record(existing, t, "n2", true), kNow); break;
    }
  }
}

struct Row {
  uint64_t n = 0, d = 0;
  uint32_t round_trips = 0, messages = 0;
  uint64_t bytes = 0, record_bytes = 0, records = 0, fingerprints = 0, items = 0;
  uint64_t naive_bytes = 0;
  double session_ms = 0;
  bool converged = false;
};

Row run_session(VolumeStore& a, VolumeStore& b, uint64_t session_id) {
  const uint64_t a_count = a.size();
  SyncSession init(SyncSession::Role::kInitiator, &a, session_id);
  SyncSession resp(SyncSession::Role::kResponder, &b, session_id);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<SyncMessage> msg = init.start(kNow);
  bool to_responder = true;
  while (msg) {
    auto reply = (to_responder ? resp : init).on_message(*msg, kNow);
    if (!reply.ok()) {
      std::fprintf(stderr, "caesium-bench sync: session failed: %s\n", reply.error().message.c_str());
      break;
    }
    msg = std::move(*reply);
    to_responder = !to_responder;
  }
  const auto t1 = std::chrono::steady_clock::now();
  Row row;
  const auto& si = init.stats();
  const auto& sr = resp.stats();
  row.round_trips = si.round_trips();
  row.messages = si.messages_sent + sr.messages_sent;
  row.bytes = si.bytes_sent + sr.bytes_sent;
  row.record_bytes = si.record_bytes_sent + sr.record_bytes_sent;
  row.records = si.records_sent + sr.records_sent;
  row.fingerprints = si.fingerprints_sent + sr.fingerprints_sent;
  row.items = si.items_sent + sr.items_sent;
  row.naive_bytes = 16 + 12 * a_count + row.record_bytes;
  row.session_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  row.converged = init.done() && resp.done() && a.root_digest() == b.root_digest();
  return row;
}

int run_sync(const Args& args) {
  const std::vector<int64_t> sizes = parse_list(args.get("sizes", "10000,1000000"));
  const std::vector<int64_t> diffs = parse_list(args.get("diffs", "0,1,10,100,1000"));
  Rng rng(static_cast<uint64_t>(args.get_int("seed", 1)));
  const int64_t repeat = args.get_int("repeat", 50);
  struct Worst {
    uint64_t n = 0;
    uint32_t sessions = 0, max_round_trips = 0;
    uint64_t max_bytes = 0;
  };
  std::vector<Worst> worst;
  bool all_converged_repeat = true;
  std::vector<Row> rows;
  for (int64_t n_signed : sizes) {
    const auto n = static_cast<uint64_t>(n_signed);
    auto a = std::make_unique<VolumeStore>("default", "n1");
    auto b = std::make_unique<VolumeStore>("default", "n2");
    for (uint64_t i = 0; i < n; ++i) {
      const Record r = make_record(i, kNow - 1'000'000 + static_cast<int64_t>(rng.below(900'000)), kOrigins[i % 3], false);
      (void)a->merge(r, kNow);
      (void)b->merge(r, kNow);
    }
    uint64_t next_key = n;
    for (int64_t d : diffs) {
      add_differences(rng, *a, *b, n, &next_key, static_cast<uint64_t>(d));
      Row row = run_session(*a, *b, rng.next_u64());
      row.n = n;
      row.d = static_cast<uint64_t>(d);
      rows.push_back(row);
    }
    // The worst of many sessions for d = 10: the bounds must hold for every draw of the
    // differences, not on average.
    Worst w{n, 0, 0, 0};
    for (int64_t i = 0; i < repeat; ++i) {
      add_differences(rng, *a, *b, n, &next_key, 10);
      const Row row = run_session(*a, *b, rng.next_u64());
      w.sessions++;
      w.max_round_trips = std::max(w.max_round_trips, row.round_trips);
      w.max_bytes = std::max(w.max_bytes, row.bytes);
      all_converged_repeat = all_converged_repeat && row.converged;
    }
    worst.push_back(w);
  }
  bool all_converged = all_converged_repeat;
  for (const Row& r : rows) all_converged = all_converged && r.converged;
  if (args.json) {
    std::printf("{\"benchmark\":\"sync\",\"converged\":%s,\"runs\":[", all_converged ? "true" : "false");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"n\":%llu,\"d\":%llu,\"round_trips\":%u,\"messages\":%u,\"bytes\":%llu,"
                  "\"record_bytes\":%llu,\"protocol_bytes\":%llu,\"records\":%llu,\"fingerprints\":%llu,"
                  "\"items\":%llu,\"naive_bytes\":%llu,\"naive_over_session\":%.1f,\"session_ms\":%.2f}",
                  i ? "," : "", static_cast<unsigned long long>(r.n), static_cast<unsigned long long>(r.d),
                  r.round_trips, r.messages, static_cast<unsigned long long>(r.bytes),
                  static_cast<unsigned long long>(r.record_bytes),
                  static_cast<unsigned long long>(r.bytes - r.record_bytes),
                  static_cast<unsigned long long>(r.records), static_cast<unsigned long long>(r.fingerprints),
                  static_cast<unsigned long long>(r.items), static_cast<unsigned long long>(r.naive_bytes),
                  static_cast<double>(r.naive_bytes) / static_cast<double>(r.bytes), r.session_ms);
    }
    std::printf("],\"worst_of_repeats_d10\":[");
    for (size_t i = 0; i < worst.size(); ++i) {
      std::printf("%s{\"n\":%llu,\"sessions\":%u,\"max_round_trips\":%u,\"max_bytes\":%llu}", i ? "," : "",
                  static_cast<unsigned long long>(worst[i].n), worst[i].sessions, worst[i].max_round_trips,
                  static_cast<unsigned long long>(worst[i].max_bytes));
    }
    std::printf("]}\n");
  } else {
    std::printf("anti-entropy session cost (bytes = wire_size estimate, both directions)\n");
    std::printf("%9s %5s %3s %4s %9s %9s %9s %7s %11s %8s %9s\n", "n", "d", "RTs", "msgs", "bytes",
                "protocol", "records", "#recs", "naive", "naive/x", "ms");
    for (const Row& r : rows) {
      std::printf("%9llu %5llu %3u %4u %9llu %9llu %9llu %7llu %11llu %7.1fx %9.2f%s\n",
                  static_cast<unsigned long long>(r.n), static_cast<unsigned long long>(r.d), r.round_trips,
                  r.messages, static_cast<unsigned long long>(r.bytes),
                  static_cast<unsigned long long>(r.bytes - r.record_bytes),
                  static_cast<unsigned long long>(r.record_bytes), static_cast<unsigned long long>(r.records),
                  static_cast<unsigned long long>(r.naive_bytes),
                  static_cast<double>(r.naive_bytes) / static_cast<double>(r.bytes), r.session_ms,
                  r.converged ? "" : "  NOT CONVERGED");
    }
    std::printf("naive = every (key hash, fingerprint) of the initiator (12 B each) + the same records\n");
    for (const Row& r : rows) {
      if (r.d == 0) std::printf("target n=%llu d=0: 1 RT, < 100 B: %s\n", static_cast<unsigned long long>(r.n),
                                r.round_trips == 1 && r.bytes < 100 ? "met" : "NOT MET");
      if (r.d == 10) std::printf("target n=%llu d=10: <= 3 RTs, <= 16 KiB: %s\n", static_cast<unsigned long long>(r.n),
                                 r.round_trips <= 3 && r.bytes <= 16 * 1024 ? "met" : "NOT MET");
    }
    for (const Worst& w : worst) {
      std::printf("worst of %u more sessions with d=10 among n=%llu: %u RTs, %llu bytes: %s\n", w.sessions,
                  static_cast<unsigned long long>(w.n), w.max_round_trips,
                  static_cast<unsigned long long>(w.max_bytes),
                  w.max_round_trips <= 3 && w.max_bytes <= 16 * 1024 ? "met" : "NOT MET");
    }
  }
  return all_converged ? 0 : 1;
}

CAESIUM_BENCH("sync", "anti-entropy bytes and round trips for d differences among n records vs full exchange", run_sync,
              {"sizes", "N,...", "store sizes (default 10000,1000000)", 1},
              {"diffs", "N,...", "differences (default 0,1,10,100,1000)", 0},
              {"seed", "N", "PRNG seed (default 1)"},
              {"repeat", "N", "repetitions per case (default 50)"});

}  // namespace
}  // namespace caesium::bench
