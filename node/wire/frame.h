// Frames: every datagram and every stream frame is authenticated and encrypted with
// the cluster key (XChaCha20-Poly1305), with the cluster name as associated data, so a
// node of another cluster, a node with the wrong key, a corrupted byte or a forged
// packet is rejected before any decoding (docs/design.md §8).
//
// Layout (all integers little-endian):
//
//   0      1        2        3      4..7     8..31          32..
//   magic  format   channel  0      key id   nonce (24 B)   ciphertext || tag (16 B)
//   0xCA   1
//
//   nonce = sender boot id (8) || 0 (8) || sender frame counter (8)
//   (before 2026-11-22 the counter came before the zeros; receivers never look inside
//   the nonce, so both layouts open everywhere)
//   associated data = header bytes 0..31 || cluster name
//
// Nonce uniqueness: the counter is per sealer (one per process lifetime) and never
// repeats; the boot id is random per process start.  Replay protection is the
// ReplayGuard's job, after decryption, on the authenticated envelope (sender, boot,
// per-peer sequence number, timestamp window).
//
// This file calls libsodium's deterministic primitives only; it never draws random
// numbers (the boot id is passed in), so it stays inside the sans-IO rule.  The
// driver must call sodium_init() once before use.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/hash_keyed_map.h"
#include "base/result.h"

namespace caesium::wire {

inline constexpr size_t kKeyBytes = 32;
inline constexpr size_t kFrameHeaderBytes = 32;
inline constexpr size_t kFrameTagBytes = 16;
inline constexpr size_t kFrameOverheadBytes = kFrameHeaderBytes + kFrameTagBytes;
inline constexpr uint8_t kFrameMagic = 0xCA;
inline constexpr uint8_t kFrameFormat = 1;

using Key = std::array<uint8_t, kKeyBytes>;

// One primary key (used to seal) and any number of accepted keys (used to open), so a
// cluster can rotate keys without a flag day: add the new key as accepted everywhere,
// then make it primary everywhere, then drop the old one.
//
// Text format (a key file):
//   # comment
//   primary = <base64 of 32 bytes>
//   accept  = <base64 of 32 bytes>      (zero or more)
class Keyring {
 public:
  static Result<Keyring> parse(std::string_view text);
  static Keyring single(const Key& key);
  std::string to_text() const;

  const Key& primary() const { return keys_.front(); }
  uint32_t primary_id() const { return ids_.front(); }
  // The key with this id, or nullptr.
  const Key* find(uint32_t key_id) const;
  size_t size() const { return keys_.size(); }

  static uint32_t key_id(const Key& key);

 private:
  std::vector<Key> keys_;  // keys_[0] is the primary
  std::vector<uint32_t> ids_;
};

enum class FrameChannel : uint8_t { kDatagram = 0, kStream = 1 };

struct OpenedFrame {
  FrameChannel channel = FrameChannel::kDatagram;
  uint64_t boot_id = 0;
  std::string plaintext;
};

// Why a frame was refused; counted by the node (auth failures are a metric).
enum class FrameError : uint8_t { kTooShort, kBadMagic, kBadFormat, kUnknownKey, kAuthFailed };
const char* to_string(FrameError e);

class FrameCipher {
 public:
  FrameCipher(Keyring keyring, std::string cluster_name, uint64_t boot_id);

  std::string seal(FrameChannel channel, std::string_view plaintext);
  // On failure returns false and sets `error`; `out` is unspecified.
  bool open(std::string_view frame, OpenedFrame& out, FrameError& error) const;

  void set_keyring(Keyring keyring) {
    keyring_ = std::move(keyring);
    subkey_ready_ = false;
  }
  const Keyring& keyring() const { return keyring_; }
  uint64_t boot_id() const { return boot_id_; }

 private:
  const uint8_t* sealing_subkey();

  Keyring keyring_;
  std::string cluster_name_;
  uint64_t boot_id_;
  uint64_t counter_ = 0;
  // HChaCha20(primary key, boot id || 0^8); recomputed after set_keyring.
  Key subkey_{};
  bool subkey_ready_ = false;
};

// Replay protection on authenticated envelopes: each (sender, boot, channel) has a
// sliding window over per-peer sequence numbers, and envelopes whose sender timestamp
// is further than `window_ms` from the receiver's clock are refused (so a frame
// captured long ago is useless even after the receiver forgot the sender's state).
class ReplayGuard {
 public:
  explicit ReplayGuard(int64_t window_ms = 120'000) : window_ms_(window_ms) {}

  enum class Verdict : uint8_t { kFresh, kReplayed, kTooOld, kStale };
  // kFresh records the sequence number; any other verdict leaves the window's numbers
  // unchanged.
  Verdict check(std::string_view sender, uint64_t boot, FrameChannel channel, uint64_t seq,
                int64_t sent_utc_ms, int64_t now_utc_ms);

  size_t tracked() const { return windows_.size(); }

  // How far behind the highest sequence number a frame may arrive.  Sequence numbers
  // count frames per (sender, receiver, channel); streams arrive in order, and a
  // datagram overtaken by 256 later ones to the same receiver is refused as stale.
  static constexpr uint64_t kWindowBits = 256;

 private:
  // One cache line per (sender, boot, channel), found by a 64-bit hash of the three
  // (at N = 1000 in the simulator a node's table is never in cache when its next frame
  // arrives, so a lookup that reads one line is the point).  Two triples with the same
  // hash would share a window: 2^-64 per pair.  The sequence numbers
  // (highest - kWindowBits, highest] seen, as a ring: sequence s is bit s % kWindowBits;
  // advancing clears the bits of the numbers that left the window, so an in-order frame
  // touches one word.
  struct Window {
    uint64_t highest = 0;  // highest sequence number seen (0 = none)
    int64_t last_seen_utc_ms = 0;
    std::array<uint64_t, kWindowBits / 64> bits{};
  };
  static_assert(sizeof(Window) + sizeof(uint64_t) == 56);  // with its key, within one line
  static uint64_t key_of(std::string_view sender, uint64_t boot, FrameChannel channel);
  void forget_idle(int64_t now_utc_ms);

  int64_t window_ms_;
  HashKeyedMap<Window> windows_;  // never iterated into output (only swept)
  int64_t last_sweep_utc_ms_ = 0;
};

}  // namespace caesium::wire
