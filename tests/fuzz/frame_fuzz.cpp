// libFuzzer target: everything a node does with bytes that arrive from the network
// before they reach the Node core (docs/design.md §8).
//
// The first input byte picks a path; the rest is the payload:
//   0  the payload as a frame: FrameCipher::open must refuse it cleanly (a forged frame
//      cannot authenticate) or, when it opens, decode() must not crash.
//   1  the payload sealed with the cluster key, then opened and decoded: this reaches the
//      Cap'n Proto decoder with arbitrary plaintext.  Anything that decodes must encode
//      and decode again to the same envelope (minus the messages of unknown kinds,
//      which decoding counts and leaves out).
//   2  the payload with one byte flipped after sealing: open must refuse it.
//   3  the payload as key file text: Keyring::parse succeeds or names the problem; a
//      parsed keyring prints to text that parses to the same keys.
#include <sodium.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "node/wire/codec.h"
#include "node/wire/frame.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "frame_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

using namespace caesium::wire;

FrameCipher& cipher() {
  static FrameCipher c = [] {
    check(sodium_init() >= 0, "sodium_init");
    Key k{};
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i * 7 + 1);
    return FrameCipher(Keyring::single(k), "fuzz-cluster", 0x1234);
  }();
  return c;
}

void decode_and_roundtrip(std::string_view plaintext) {
  auto env = decode(plaintext);
  if (!env.ok()) {
    check(!env.error().message.empty(), "decode error without a message");
    return;
  }
  auto again = decode(encode(*env));
  check(again.ok(), "re-encoded envelope does not decode");
  // Messages of unknown kinds were counted and left out; they are not written again.
  Envelope expected = *env;
  expected.unknown_messages = 0;
  check(*again == expected, "encode/decode round trip changed the envelope");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameCipher& c = cipher();
  OpenedFrame opened;
  FrameError error{};
  switch (data[0] % 4) {
    case 0:
      if (c.open(payload, opened, error)) decode_and_roundtrip(opened.plaintext);
      break;
    case 1: {
      const std::string frame = c.seal(FrameChannel::kStream, payload);
      check(frame.size() == payload.size() + kFrameOverheadBytes, "sealed frame size");
      check(c.open(frame, opened, error), "own sealed frame does not open");
      check(opened.plaintext == payload, "opened plaintext differs");
      check(opened.channel == FrameChannel::kStream, "channel changed");
      decode_and_roundtrip(opened.plaintext);
      break;
    }
    case 2: {
      std::string frame = c.seal(FrameChannel::kDatagram, payload);
      const size_t at = payload.empty() ? 0 : static_cast<uint8_t>(payload[0]) % frame.size();
      frame[at] = static_cast<char>(frame[at] ^ 0x01);
      check(!c.open(frame, opened, error), "a frame with a flipped bit opened");
      break;
    }
    default: {
      auto ring = Keyring::parse(payload);
      if (!ring.ok()) {
        check(!ring.error().message.empty(), "keyring error without a message");
        break;
      }
      auto back = Keyring::parse(ring->to_text());
      check(back.ok() && back->size() == ring->size() && back->primary() == ring->primary(),
            "keyring text round trip");
      break;
    }
  }
  return 0;
}
