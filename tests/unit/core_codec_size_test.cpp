// Membership packs datagrams by an estimate of their encoded size (it cannot call the
// codec: gossip/ sits below node/wire).  This checks the estimate against the real
// encoding: a real packet, sealed in a frame, must never exceed what was estimated,
// or a datagram could outgrow the 1400-byte budget.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "base/rng.h"
#include "gossip/membership.h"
#include "gossip/membership_wire_size.h"
#include "node/wire/codec.h"
#include "node/wire/frame.h"

using namespace caesium;

namespace {

std::string text(Rng& rng, size_t max_len) {
  std::string s(1 + rng.below(max_len), '\0');
  for (auto& c : s) c = static_cast<char>('a' + rng.below(26));
  return s;
}

gossip::Update random_update(Rng& rng) {
  switch (rng.below(3)) {
    case 0: {
      gossip::Alive a{text(rng, 120), rng.next_u64() >> 3, text(rng, 60), {}};
      a.meta.stream_addr = text(rng, 60);
      a.meta.api_addr = text(rng, 60);
      a.meta.priority = rng.between(-100000, 100000);
      for (uint64_t i = rng.below(6); i > 0; --i) a.meta.tags.push_back(text(rng, 30));
      a.meta.capacity = {static_cast<uint32_t>(rng.next_u64()), static_cast<uint32_t>(rng.next_u64()),
                         static_cast<uint32_t>(rng.next_u64())};
      a.meta.load = {static_cast<uint32_t>(rng.next_u64()), static_cast<uint32_t>(rng.next_u64()),
                     static_cast<uint32_t>(rng.next_u64())};
      a.meta.config_epoch = rng.next_u64();
      a.meta.boot_id = rng.next_u64();
      for (uint64_t i = rng.below(gossip::kMaxUnfilledListed + 1); i > 0; --i) a.meta.unfilled_volumes.push_back(text(rng, 128));
      return a;
    }
    case 1: return gossip::Suspect{text(rng, 120), rng.next_u64() >> 3, text(rng, 120)};
    default: return gossip::Dead{text(rng, 120), rng.next_u64() >> 3, text(rng, 120)};
  }
}

}  // namespace

TEST_CASE("real packet encodings never exceed the membership size estimate", "[core][wire]") {
  uint64_t seed = 20261121;
  if (const char* s = std::getenv("CAESIUM_SEED")) seed = std::strtoull(s, nullptr, 10);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  wire::Key key;
  key.fill(7);
  wire::FrameCipher cipher(wire::Keyring::single(key), "cluster", 1);
  const gossip::MembershipConfig config;
  for (int i = 0; i < 3000; ++i) {
    gossip::Packet p;
    switch (rng.below(5)) {
      case 0: p.primary = gossip::GossipOnly{}; break;
      case 1: p.primary = gossip::Ping{static_cast<uint32_t>(rng.next_u64()), text(rng, 120)}; break;
      case 2: p.primary = gossip::Ack{static_cast<uint32_t>(rng.next_u64())}; break;
      case 3: p.primary = gossip::PingReq{static_cast<uint32_t>(rng.next_u64()), text(rng, 120), text(rng, 60), true}; break;
      default: p.primary = gossip::Nack{static_cast<uint32_t>(rng.next_u64())}; break;
    }
    for (uint64_t k = rng.below(8); k > 0; --k) p.updates.push_back(random_update(rng));
    wire::Envelope env;
    env.sender = text(rng, 120);
    env.sender_addr = text(rng, 60);
    env.sent_utc_ms = static_cast<int64_t>(rng.next_u64() >> 2);
    env.seq = rng.next_u64();
    env.boot_id = rng.next_u64();
    env.body = p;
    const size_t real = cipher.seal(wire::FrameChannel::kDatagram, wire::encode(env)).size();
    // Membership budgets: packet estimate + the sender's id and address + fixed overhead.
    const size_t budget = gossip::estimated_wire_size(p) + env.sender.size() + env.sender_addr.size() +
                          config.packet_overhead_bytes;
    INFO("packet " << i << ": real " << real << " bytes, estimated " << budget);
    REQUIRE(real <= budget);
  }
}
