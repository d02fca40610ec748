// The codec and frame layer: round trips, hostile bytes, authentication, replay.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <set>

#include <sodium.h>

#include "base/base64.h"
#include "base/rng.h"
#include "node/wire/codec.h"
#include "node/wire/frame.h"
#include "wire/caesium.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

using namespace caesium;
using namespace caesium::wire;

namespace {

const bool sodium_ready = [] { return sodium_init() >= 0; }();

uint64_t test_seed() {
  if (const char* s = std::getenv("CAESIUM_SEED")) return std::strtoull(s, nullptr, 10);
  return 20261121;
}

std::string random_string(Rng& rng, size_t max_len) {
  std::string s(rng.below(max_len + 1), '\0');
  for (auto& c : s) c = static_cast<char>(rng.below(256));
  return s;
}

std::string random_text(Rng& rng, size_t max_len) {
  std::string s(rng.below(max_len + 1), '\0');
  for (auto& c : s) c = static_cast<char>('a' + rng.below(26));
  return s;
}

gossip::MemberMeta random_meta(Rng& rng) {
  gossip::MemberMeta m;
  m.stream_addr = random_text(rng, 20);
  m.api_addr = random_text(rng, 20);
  m.priority = rng.between(-1000, 1000);
  for (uint64_t i = rng.below(4); i > 0; --i) m.tags.push_back(random_text(rng, 8));
  m.capacity = {static_cast<uint32_t>(rng.below(64)), static_cast<uint32_t>(rng.below(1 << 20)),
                static_cast<uint32_t>(rng.below(100))};
  m.load = {static_cast<uint32_t>(rng.below(100)), static_cast<uint32_t>(rng.below(100)),
            static_cast<uint32_t>(rng.below(10000))};
  m.config_epoch = rng.next_u64();
  m.protocol_version = 1;
  m.boot_id = rng.next_u64();
  for (uint64_t i = rng.below(3); i > 0; --i) m.unfilled_volumes.push_back(random_text(rng, 12));
  return m;
}

gossip::Update random_update(Rng& rng) {
  switch (rng.below(3)) {
    case 0: return gossip::Alive{random_text(rng, 16), rng.next_u64(), random_text(rng, 21), random_meta(rng)};
    case 1: return gossip::Suspect{random_text(rng, 16), rng.next_u64(), random_text(rng, 16)};
    default: return gossip::Dead{random_text(rng, 16), rng.next_u64(), random_text(rng, 16)};
  }
}

schedule::OccurrenceId random_occ(Rng& rng) {
  return {random_text(rng, 40), rng.between(0, int64_t{1} << 42)};
}

schedule::Record random_record(Rng& rng) {
  schedule::Record r;
  r.key = random_string(rng, 40);
  if (rng.chance(0.8)) r.value = random_string(rng, 100);
  r.version = {rng.between(0, int64_t{1} << 42), static_cast<uint32_t>(rng.below(1000)), random_text(rng, 8)};
  return r;
}

// A random core message of the kind numbered `kind` below (0: a claim, 1: a claim reply).
CoreMessage random_core_of(Rng& rng, uint64_t kind) {
  switch (kind) {
    case 9: {
      StorePush p;
      p.volume = random_text(rng, 8);
      for (uint64_t i = rng.below(5); i > 0; --i) p.records.push_back(random_record(rng));
      p.want_ack = rng.chance(0.5);
      return p;
    }
    case 11: {
      StoreAck a;
      a.volume = random_text(rng, 8);
      for (uint64_t i = rng.below(4); i > 0; --i) a.records.emplace_back(random_string(rng, 30), random_record(rng).version);
      return a;
    }
    case 10: {
      gossip::SyncMessage m;
      m.volume = random_text(rng, 8);
      m.session_id = rng.next_u64();
      m.seq = static_cast<uint32_t>(rng.below(100));
      m.sender_done = rng.chance(0.5);
      m.final = rng.chance(0.5);
      if (rng.chance(0.5)) m.root = gossip::SyncRoot{rng.next_u64(), rng.next_u64()};
      for (uint64_t i = rng.below(3); i > 0; --i) {
        gossip::SyncFingerprints f{rng.next_u64(), static_cast<uint8_t>(rng.below(64)), 4, {}};
        for (int k = 0; k < 16; ++k) f.fingerprints.push_back(static_cast<uint32_t>(rng.next_u64()));
        m.fingerprints.push_back(std::move(f));
      }
      for (uint64_t i = rng.below(3); i > 0; --i) {
        gossip::SyncItemList l{rng.next_u64(), static_cast<uint8_t>(rng.below(64)), {}};
        for (uint64_t k = rng.below(5); k > 0; --k) l.items.push_back({rng.next_u64(), static_cast<uint32_t>(rng.next_u64())});
        m.item_lists.push_back(std::move(l));
      }
      for (uint64_t i = rng.below(4); i > 0; --i) m.wanted.push_back(rng.next_u64());
      for (uint64_t i = rng.below(4); i > 0; --i) m.records.push_back(random_record(rng));
      return m;
    }
    case 0: return schedule::Claim{random_text(rng, 8), random_occ(rng), {random_text(rng, 8), rng.next_u64()},
                                   random_text(rng, 8), rng.between(0, int64_t{1} << 42),
                                   static_cast<schedule::ClaimKind>(rng.below(4)), rng.next_u64(),
                                   {static_cast<uint32_t>(rng.below(9)), random_text(rng, 16), random_text(rng, 8),
                                    rng.between(0, int64_t{1} << 42), static_cast<uint32_t>(1 + rng.below(5))},
                                   rng.next_u64(), rng.next_u64(),
                                   {rng.between(0, int64_t{1} << 42), static_cast<uint32_t>(rng.below(1000)),
                                    random_text(rng, 8)},
                                   rng.next_u64()};
    case 1: {
      schedule::ClaimReply r;
      r.volume = random_text(rng, 8);
      r.occ = random_occ(rng);
      r.outcome = static_cast<schedule::ClaimOutcome>(rng.below(8));
      r.holder = {random_text(rng, 8), rng.next_u64()};
      r.retry_after_ms = rng.between(0, 10000);
      r.holder_alive = rng.chance(0.5);
      r.kind = static_cast<schedule::ClaimKind>(rng.below(4));
      r.round = rng.next_u64();
      r.promised_round = rng.next_u64();
      r.has_accepted = rng.chance(0.5);
      r.accepted_round = rng.next_u64();
      r.accepted_by = {random_text(rng, 8), rng.next_u64()};
      r.accepted = {static_cast<uint32_t>(rng.below(9)), random_text(rng, 16), random_text(rng, 8), rng.between(0, 99999),
                    static_cast<uint32_t>(1 + rng.below(5))};
      r.lease = rng.next_u64();
      r.went = rng.chance(0.5);
      return r;
    }
    case 2: return schedule::Release{random_text(rng, 8), random_occ(rng), {random_text(rng, 8), rng.next_u64()}};
    case 3: {
      schedule::Dispatch d;
      d.volume = random_text(rng, 8);
      d.occ = random_occ(rng);
      d.owner = {random_text(rng, 8), rng.next_u64()};
      d.fire_id = random_text(rng, 16);
      d.attempt = static_cast<uint32_t>(rng.below(10));
      d.at_most_once = rng.chance(0.5);
      d.possible_duplicate = rng.chance(0.5);
      d.accept_by_utc_ms = rng.between(0, int64_t{1} << 42);
      d.handler = random_text(rng, 10);
      d.payload = random_string(rng, 300);
      d.sequence = rng.next_u64();
      d.issued_utc_ms = rng.between(0, int64_t{1} << 42);
      d.run_at_utc_ms = rng.chance(0.5) ? 0 : rng.between(0, int64_t{1} << 42);
      d.timeout_ms = rng.chance(0.5) ? 0 : rng.between(1, 86'400'000);
      d.run = static_cast<uint32_t>(1 + rng.below(5));
      d.runs = static_cast<uint32_t>(rng.below(6));
      if (rng.chance(0.5)) {
        d.entry_version = schedule::Version{rng.between(1, int64_t{1} << 42), static_cast<uint32_t>(rng.below(100)),
                                            random_text(rng, 8)};
      }
      d.worker_boot = rng.chance(0.5) ? 0 : rng.next_u64();
      d.on_failure = rng.chance(0.5) ? std::string() : random_text(rng, 12);
      return d;
    }
    case 4: return schedule::DispatchReply{random_text(rng, 8), random_occ(rng), random_text(rng, 16),
                                           static_cast<schedule::DispatchOutcome>(rng.below(2)), random_text(rng, 30),
                                           rng.next_u64()};
    case 5: return schedule::Revoke{random_text(rng, 8), random_occ(rng), random_text(rng, 16),
                                    rng.between(0, int64_t{1} << 42), rng.chance(0.5) ? 0 : rng.between(0, int64_t{1} << 42),
                                    rng.chance(0.5) ? 0 : rng.next_u64()};
    case 6: return schedule::RevokeReply{random_text(rng, 8), random_occ(rng), random_text(rng, 16),
                                         static_cast<schedule::RevokeOutcome>(rng.below(4)), rng.next_u64()};
    case 7: return ConfigRequest{rng.next_u64()};
    case 12:
      return ConfigVote{static_cast<ConfigVote::Kind>(rng.below(5)), rng.next_u64(), rng.next_u64(), random_text(rng, 8),
                        rng.next_u64(), random_text(rng, 8), random_string(rng, 200)};
    case 13: {
      schedule::Go g{{random_text(rng, 8), rng.next_u64()}, rng.between(0, int64_t{1} << 42), {}};
      for (uint64_t i = rng.below(4); i > 0; --i) g.fenced.push_back(random_text(rng, 16));
      return g;
    }
    case 14: {
      schedule::GoAsk ask;
      for (uint64_t i = rng.below(4); i > 0; --i) {
        ask.items.push_back({random_text(rng, 8), random_occ(rng), random_text(rng, 16), rng.between(0, int64_t{1} << 42)});
      }
      return ask;
    }
    case 15: {
      schedule::GoAnswer answer;
      for (uint64_t i = rng.below(4); i > 0; --i) {
        answer.items.push_back({random_text(rng, 16), static_cast<schedule::GoVerdict>(rng.below(3))});
      }
      return answer;
    }
    default: return ConfigDoc{rng.next_u64(), random_string(rng, 200)};
  }
}

CoreMessage random_core(Rng& rng) { return random_core_of(rng, rng.below(16)); }

Envelope random_envelope(Rng& rng) {
  Envelope e;
  e.sender = random_text(rng, 16);
  e.sender_addr = random_text(rng, 21);
  e.sent_utc_ms = rng.between(0, int64_t{1} << 42);
  e.seq = rng.next_u64();
  e.boot_id = rng.next_u64();
  switch (rng.below(3)) {
    case 0: {
      gossip::Packet p;
      switch (rng.below(5)) {
        case 0: p.primary = gossip::GossipOnly{}; break;
        case 1: p.primary = gossip::Ping{static_cast<uint32_t>(rng.next_u64()), random_text(rng, 16)}; break;
        case 2: p.primary = gossip::Ack{static_cast<uint32_t>(rng.next_u64())}; break;
        case 3: p.primary = gossip::PingReq{static_cast<uint32_t>(rng.next_u64()), random_text(rng, 16),
                                            random_text(rng, 21), rng.chance(0.5)}; break;
        default: p.primary = gossip::Nack{static_cast<uint32_t>(rng.next_u64())}; break;
      }
      for (uint64_t i = rng.below(6); i > 0; --i) p.updates.push_back(random_update(rng));
      e.body = std::move(p);
      break;
    }
    case 1: {
      gossip::PushPull pp;
      pp.join = rng.chance(0.5);
      pp.reply_wanted = rng.chance(0.5);
      pp.digest_only = rng.chance(0.5);
      pp.digest = rng.next_u64();
      for (uint64_t i = rng.below(8); i > 0; --i) {
        pp.members.push_back({random_text(rng, 16), random_text(rng, 21), rng.next_u64(),
                              static_cast<gossip::MemberState>(rng.below(4)), random_meta(rng)});
      }
      e.body = std::move(pp);
      break;
    }
    default: {
      std::vector<CoreMessage> batch;
      for (uint64_t i = rng.below(6); i > 0; --i) batch.push_back(random_core(rng));
      e.body = std::move(batch);
      break;
    }
  }
  return e;
}

Key test_key(uint8_t fill) {
  Key k;
  k.fill(fill);
  return k;
}

}  // namespace

TEST_CASE("every message type round-trips through the codec", "[wire]") {
  REQUIRE(sodium_ready);
  const uint64_t seed = test_seed();
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  for (int i = 0; i < 2000; ++i) {
    const Envelope e = random_envelope(rng);
    const std::string bytes = encode(e);
    auto back = decode(bytes);
    REQUIRE(back.ok());
    REQUIRE(*back == e);
  }
}

namespace {

// A batch of core messages with runs of claims of one claimant for one volume and config,
// and runs of claim replies for one volume, between other messages.
std::vector<CoreMessage> claim_runs(Rng& rng) {
  std::vector<CoreMessage> batch;
  for (uint64_t r = 1 + rng.below(4); r > 0; --r) {
    CoreMessage first = random_core(rng);
    if (rng.chance(0.4)) first = random_core_of(rng, 0);
    if (rng.chance(0.3)) first = random_core_of(rng, 1);
    batch.push_back(first);
    for (uint64_t i = rng.below(6); i > 0; --i) {
      CoreMessage next = random_core_of(rng, first.index() == 1 ? 0 : 1);
      if (auto* c = std::get_if<schedule::Claim>(&next); c && std::holds_alternative<schedule::Claim>(first)) {
        const auto& f = std::get<schedule::Claim>(first);
        c->volume = f.volume;
        c->claimant = f.claimant;
        c->config_epoch = f.config_epoch;
        if (rng.chance(0.9)) c->sets_hash = f.sets_hash;  // else: a different config, another batch
      } else if (auto* x = std::get_if<schedule::ClaimReply>(&next); x && std::holds_alternative<schedule::ClaimReply>(first)) {
        x->volume = std::get<schedule::ClaimReply>(first).volume;
      }
      batch.push_back(std::move(next));
    }
  }
  return batch;
}

}  // namespace

TEST_CASE("claim batches decode as the claims and replies they carry, in order", "[wire]") {
  const uint64_t seed = test_seed();
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  size_t smaller = 0;
  for (int i = 0; i < 1000; ++i) {
    Envelope e;
    e.sender = "n1";
    e.body = claim_runs(rng);
    const std::string one_by_one = encode(e);
    const std::string batched = encode(e, true);
    auto back = decode(batched);
    REQUIRE(back.ok());
    REQUIRE(*back == e);
    auto plain = decode(one_by_one);
    REQUIRE(plain.ok());
    REQUIRE(*plain == e);
    if (batched.size() < one_by_one.size()) ++smaller;
  }
  CHECK(smaller > 500);  // most cases hold a run of two or more sharing their fields
}

TEST_CASE("a master's claims of a loop turn to one replica take fewer bytes as one batch", "[wire]") {
  Envelope e;
  e.sender = "n1";
  std::vector<CoreMessage> claims;
  std::vector<CoreMessage> replies;
  for (int i = 0; i < 200; ++i) {
    schedule::Claim c;
    c.volume = "orders-eu-west";
    c.occ = {"tenant-42/caesium/schedule/invoice-" + std::to_string(i), 1'790'000'000'000 + i * 10};
    c.claimant = {"node-eu-west-1a", 0x1234'5678'9abc'def0};
    c.worker = "node-eu-west-1b";
    c.fire_utc_ms = c.occ.scheduled_utc_ms;
    c.attempt = {1, "f-" + std::to_string(i), c.worker, c.fire_utc_ms - 5000, 1};
    c.config_epoch = 7;
    c.sets_hash = 0xfeed'beef;
    c.entry_version = {1'789'000'000'000 + i, 0, "node-eu-west-1c"};
    c.lease = 99;
    claims.emplace_back(c);
    schedule::ClaimReply r;
    r.volume = c.volume;
    r.occ = c.occ;
    r.holder = c.claimant;
    r.lease = c.lease;
    replies.emplace_back(r);
  }
  // Claims share their volume, claimant and config; replies their volume only.  Percent of
  // the one-by-one size a batch takes at most (measured 76% and 89%).
  for (auto [batch, percent] : {std::pair{&claims, 80}, std::pair{&replies, 92}}) {
    e.body = *batch;
    const size_t one_by_one = encode(e).size();
    const size_t batched = encode(e, true).size();
    INFO("one by one " << one_by_one << " bytes, batched " << batched);
    CHECK(batched * 100 < one_by_one * static_cast<size_t>(percent));
    auto back = decode(encode(e, true));
    REQUIRE(back.ok());
    CHECK(*back == e);
  }
}

TEST_CASE("hostile bytes never crash the decoder", "[wire]") {
  const uint64_t seed = test_seed();
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  size_t rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    Envelope base = random_envelope(rng);
    if (rng.chance(0.3)) base.body = claim_runs(rng);
    const std::string good = encode(base, rng.chance(0.5));
    std::string bad = good;
    switch (rng.below(4)) {
      case 0: bad = random_string(rng, 200); break;
      case 1: bad.resize(rng.below(bad.size())); break;  // truncation
      case 2:
        for (uint64_t k = 1 + rng.below(4); k > 0; --k) bad[rng.below(bad.size())] ^= static_cast<char>(1 + rng.below(255));
        break;
      default: bad += random_string(rng, 16); break;  // trailing junk
    }
    auto r = decode(bad);  // must return, ok or not
    if (!r.ok()) {
      ++rejected;
      CHECK_FALSE(r.error().message.empty());
    }
  }
  CHECK(rejected > 100);
  CHECK_FALSE(decode("").ok());
}

TEST_CASE("a tiny message declaring a huge segment is refused without allocating it", "[wire]") {
  // Packed encoding: tag byte 0xff means 8 literal bytes follow.  Segment table: one
  // segment (count-1 = 0) of 0x0fffffff words (2 GiB).
  std::string bad;
  bad += '\xff';
  const uint32_t count_minus_one = 0, words = 0x0fffffff;
  bad.append(reinterpret_cast<const char*>(&count_minus_one), 4);
  bad.append(reinterpret_cast<const char*>(&words), 4);
  bad += '\0';  // then a zero-run tag
  bad += '\xfe';
  auto r = decode(bad);
  REQUIRE_FALSE(r.ok());
}

TEST_CASE("a list longer than its message is refused", "[wire]") {
  // frame_fuzz crash 4a60bb75: 29 bytes declaring a batch of 6,720 empty elements.  The
  // reader's traversal limit lets them through (one word each); each would decode to a
  // message that encodes again to two words, so its own encoding would be refused.
  const unsigned char crash[] = {0x10, 0x09, 0x58, 0x00, 0x05, 0x03, 0x45, 0x01, 0x03, 0x23,
                                 0x20, 0x23, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0xc6, 0x21, 0x00,
                                 0x2c, 0x00, 0x00, 0x00, 0x00, 0x21, 0x41, 0xd2};
  auto r = decode(std::string_view(reinterpret_cast<const char*>(crash), sizeof crash));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("more elements than the message has bytes") != std::string::npos);

  // The same shape built on purpose: a batch of messages of no kind (what a newer
  // sender's unknown kinds decode to).  2,000 of them alone pack into a few dozen bytes
  // and are refused; 20 among 20 real messages are counted and left out.
  auto build = [](unsigned unknown, unsigned real) {
    ::capnp::MallocMessageBuilder builder;
    auto root = builder.initRoot<caesium::wire::capnp::Envelope>();
    root.setVersion(kProtocolVersion);
    root.setSender("n1");
    auto list = root.getBody().initBatch(unknown + real);
    for (unsigned i = 0; i < unknown + real; ++i) {
      if (i < real) {
        auto release = list[i].initRelease();
        release.setVolume("v1");
        release.initOcc().setEntryKey("e/" + std::to_string(i));
        release.initClaimant().setNode("n1");
      } else {
        list[i].setUnknown();
      }
    }
    kj::VectorOutputStream out;
    ::capnp::writePackedMessage(out, builder);
    return std::string(reinterpret_cast<const char*>(out.getArray().begin()), out.getArray().size());
  };
  const std::string forged = build(2000, 0);
  INFO("forged batch: " << forged.size() << " bytes");
  CHECK(forged.size() < 100);
  CHECK_FALSE(decode(forged).ok());

  auto mixed = decode(build(20, 20));
  REQUIRE(mixed.ok());
  const auto* got = std::get_if<std::vector<CoreMessage>>(&mixed->body);
  REQUIRE(got != nullptr);
  CHECK(got->size() == 20);
  CHECK(mixed->unknown_messages == 20);
  for (const CoreMessage& m : *got) CHECK(std::holds_alternative<schedule::Release>(m));

  // encode() leaves out what it does not know, and the rest round-trips.
  Envelope e;
  e.sender = "n1";
  e.body = std::vector<CoreMessage>{schedule::Release{"v1", {"e/x", 1000}, {"n1", 7}}, UnknownMessage{},
                                    schedule::Release{"v1", {"e/y", 2000}, {"n1", 7}}};
  auto back = decode(encode(e));
  REQUIRE(back.ok());
  CHECK(back->unknown_messages == 0);
  const auto* batch = std::get_if<std::vector<CoreMessage>>(&back->body);
  REQUIRE(batch != nullptr);
  REQUIRE(batch->size() == 2);
  CHECK(std::get<schedule::Release>((*batch)[1]).occ.entry_key == "e/y");
}

TEST_CASE("an envelope with a body this version does not know decodes as Unknown", "[wire]") {
  Envelope e;
  e.sender = "n1";
  e.body = UnknownBody{};
  auto back = decode(encode(e));
  REQUIRE(back.ok());
  CHECK(std::holds_alternative<UnknownBody>(back->body));
}

TEST_CASE("frames open only with the right key and cluster name", "[wire][frame]") {
  REQUIRE(sodium_ready);
  FrameCipher a(Keyring::single(test_key(1)), "prod", 77);
  FrameCipher same(Keyring::single(test_key(1)), "prod", 99);
  FrameCipher other_key(Keyring::single(test_key(2)), "prod", 99);
  FrameCipher other_cluster(Keyring::single(test_key(1)), "staging", 99);

  const std::string frame = a.seal(FrameChannel::kDatagram, "hello");
  CHECK(frame.size() == 5 + kFrameOverheadBytes);
  OpenedFrame out;
  FrameError err{};
  REQUIRE(same.open(frame, out, err));
  CHECK(out.plaintext == "hello");
  CHECK(out.boot_id == 77);
  CHECK(out.channel == FrameChannel::kDatagram);

  CHECK_FALSE(other_key.open(frame, out, err));
  CHECK(err == FrameError::kUnknownKey);
  CHECK_FALSE(other_cluster.open(frame, out, err));
  CHECK(err == FrameError::kAuthFailed);

  // Any single flipped bit anywhere is detected.
  for (size_t i = 0; i < frame.size(); ++i) {
    std::string bad = frame;
    bad[i] ^= 0x10;
    INFO("flipped byte " << i);
    CHECK_FALSE(same.open(bad, out, err));
  }
  CHECK_FALSE(same.open(frame.substr(0, 20), out, err));
  CHECK(err == FrameError::kTooShort);

  // Two seals of the same plaintext never share a nonce.
  const std::string f2 = a.seal(FrameChannel::kDatagram, "hello");
  CHECK(f2 != frame);
  CHECK(f2.substr(8, 24) != frame.substr(8, 24));
}

TEST_CASE("a sealed frame is exactly XChaCha20-Poly1305 of its header's nonce", "[wire][frame]") {
  // seal() derives the XChaCha subkey once per key and calls ChaCha20-Poly1305 (IETF)
  // itself; the result must be byte for byte what the standard construction makes, so
  // that any XChaCha20-Poly1305 implementation opens our frames.  Also across a key
  // change, which must not keep the old subkey.
  REQUIRE(sodium_ready);
  FrameCipher a(Keyring::single(test_key(1)), "prod-cluster-with-a-long-name", 0x0123456789abcdefULL);
  for (int i = 0; i < 3; ++i) {
    if (i == 2) a.set_keyring(Keyring::single(test_key(2)));
    const Key key = test_key(i == 2 ? 2 : 1);
    const std::string plaintext = "payload " + std::to_string(i) + std::string(static_cast<size_t>(i) * 100, 'x');
    const std::string frame = a.seal(i == 1 ? FrameChannel::kStream : FrameChannel::kDatagram, plaintext);
    INFO("frame " << i);
    // The nonce: boot id, eight zero bytes, then the frame counter.
    CHECK(frame.substr(16, 8) == std::string(8, '\0'));
    CHECK(static_cast<uint8_t>(frame[24]) == i + 1);
    const std::string ad = frame.substr(0, kFrameHeaderBytes) + "prod-cluster-with-a-long-name";
    std::string expect(plaintext.size() + kFrameTagBytes, '\0');
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        reinterpret_cast<unsigned char*>(expect.data()), &clen,
        reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(),
        reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr,
        reinterpret_cast<const unsigned char*>(frame.data()) + 8, key.data());
    CHECK(frame.substr(kFrameHeaderBytes) == expect);
  }
}

TEST_CASE("keyrings: rotation opens frames sealed with an accepted key", "[wire][frame]") {
  REQUIRE(sodium_ready);
  Keyring old_ring = Keyring::single(test_key(1));
  auto rotated = Keyring::parse("# rotation in progress\nprimary = " +
                                base64_encode(std::string(32, '\x02')) + "\naccept = " +
                                base64_encode(std::string(32, '\x01')) + "\n");
  REQUIRE(rotated.ok());
  CHECK(rotated->size() == 2);
  FrameCipher sender(old_ring, "c", 1);
  FrameCipher receiver(*rotated, "c", 2);
  OpenedFrame out;
  FrameError err{};
  CHECK(receiver.open(sender.seal(FrameChannel::kStream, "x"), out, err));
  CHECK(out.channel == FrameChannel::kStream);
  // And the text form round-trips.
  auto again = Keyring::parse(rotated->to_text());
  REQUIRE(again.ok());
  CHECK(again->primary() == rotated->primary());
  CHECK(again->size() == 2);
}

TEST_CASE("bad key files are clear errors", "[wire][frame]") {
  const std::string k32 = base64_encode(std::string(32, 'k'));
  struct Case { std::string text; std::string expect; };
  const Case cases[] = {
      {"", "no 'primary"},
      {"accept = " + k32 + "\n", "no 'primary"},
      {"primary = !!!\n", "not valid base64"},
      {"primary = " + base64_encode("short") + "\n", "must be 32 bytes"},
      {"primary = " + k32 + "\nprimary = " + k32 + "\n", "more than one primary"},
      {"secondary = " + k32 + "\n", "unknown entry 'secondary'"},
      {"just some words\n", "line 1"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = Keyring::parse(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(c.expect));
  }
}

TEST_CASE("the replay guard refuses duplicates, stale and out-of-window frames", "[wire][replay]") {
  ReplayGuard g(60'000);
  using V = ReplayGuard::Verdict;
  const int64_t now = 1'800'000'000'000;
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 1, now, now) == V::kFresh);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 1, now, now) == V::kReplayed);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 3, now, now) == V::kFresh);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 2, now, now) == V::kFresh);  // reordered, in window
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 2, now, now) == V::kReplayed);
  // Separate windows per boot and per channel.
  CHECK(g.check("n1", 6, FrameChannel::kDatagram, 1, now, now) == V::kFresh);
  CHECK(g.check("n1", 5, FrameChannel::kStream, 1, now, now) == V::kFresh);
  // Far ahead: the window slides; very old numbers become stale.
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 5000, now, now) == V::kFresh);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 3, now, now) == V::kStale);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 4999, now, now) == V::kFresh);
  CHECK(g.check("n1", 5, FrameChannel::kDatagram, 4999, now, now) == V::kReplayed);
  // Timestamps outside the window, either way.
  CHECK(g.check("n2", 1, FrameChannel::kDatagram, 1, now - 61'000, now) == V::kTooOld);
  CHECK(g.check("n2", 1, FrameChannel::kDatagram, 1, now + 61'000, now) == V::kTooOld);
  // Idle windows are forgotten, and a replay of their frames is then too old.
  CHECK(g.check("n3", 1, FrameChannel::kDatagram, 1, now, now) == V::kFresh);
  const int64_t later = now + 200'000;
  CHECK(g.check("n4", 1, FrameChannel::kDatagram, 1, later, later) == V::kFresh);
  CHECK(g.check("n3", 1, FrameChannel::kDatagram, 1, now, later) == V::kTooOld);
}

TEST_CASE("the replay guard's sweep forgets idle windows and keeps the live ones", "[wire][replay]") {
  // Hundreds of windows, so the table grows and the sweep's backward shifts move live
  // windows around (and across the table's end): every live window must keep its numbers.
  ReplayGuard g(1'000);
  using V = ReplayGuard::Verdict;
  int64_t now = 1'800'000'000'000;
  for (int round = 0; round < 6; ++round) {
    for (int p = 0; p < 400; ++p) {
      const std::string sender = "p" + std::to_string(p);
      // Odd peers go quiet after the first round; even peers keep sending.
      if (p % 2 == 1 && round > 0) continue;
      INFO("round " << round << " peer " << sender);
      REQUIRE(g.check(sender, 7, FrameChannel::kDatagram, 2 * round + 1, now, now) == V::kFresh);
      if (round > 0) REQUIRE(g.check(sender, 7, FrameChannel::kDatagram, 2 * round - 1, now, now) == V::kReplayed);
      REQUIRE(g.check(sender, 7, FrameChannel::kDatagram, 2 * round + 1, now, now) == V::kReplayed);
    }
    now += 1'500;  // one sweep per round; a window idle for > 2 s goes
  }
  CHECK(g.tracked() == 200);
  // A forgotten window starts afresh: its old numbers are accepted again (their
  // timestamps, not the window, refuse real replays of them).
  CHECK(g.check("p1", 7, FrameChannel::kDatagram, 1, now, now) == V::kFresh);
}

TEST_CASE("the replay window matches a reference set over random sequences", "[wire][replay]") {
  const uint64_t seed = test_seed();
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  ReplayGuard g(60'000);
  std::set<uint64_t> seen;
  uint64_t highest = 0;
  for (int i = 0; i < 20000; ++i) {
    constexpr uint64_t kBits = ReplayGuard::kWindowBits;
    const uint64_t back = std::min<uint64_t>(highest, rng.below(kBits + kBits / 2));
    // Mostly near the front (reordering, small gaps); sometimes a jump across most or
    // all of the window.
    const uint64_t ahead = rng.chance(0.05) ? rng.below(2 * kBits + kBits / 2) : rng.below(40);
    const uint64_t seq = 1 + (rng.chance(0.5) ? highest - back : highest + ahead);
    const auto v = g.check("p", 1, FrameChannel::kDatagram, seq, 0, 0);
    ReplayGuard::Verdict expect;
    if (seq + kBits <= highest) expect = ReplayGuard::Verdict::kStale;
    else if (seen.count(seq)) expect = ReplayGuard::Verdict::kReplayed;
    else expect = ReplayGuard::Verdict::kFresh;
    INFO("step " << i << " seq " << seq << " highest " << highest);
    REQUIRE(v == expect);
    if (v == ReplayGuard::Verdict::kFresh) {
      seen.insert(seq);
      highest = std::max(highest, seq);
    }
  }
}
