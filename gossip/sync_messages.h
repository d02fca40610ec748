// The messages of the anti-entropy protocol (gossip/anti_entropy.h), as plain values.
//
// One message type, SyncMessage, flows both ways over the stream channel between two
// replicas of one volume.  Its parts:
//   root          opening message only: the initiator's whole-store digest and size
//   fingerprints  "here are my fingerprints of the 2^step sub-ranges of this range"
//   item_lists    "here is every item (key hash, entry fingerprint) I hold in this range"
//   wanted        "send me your records with these key hashes"
//   records       full records for the peer to merge
// Ranges are key-hash prefixes (schedule/digest.h): `prefix` carries the top
// `prefix_bits` bits, every lower bit is zero.  Fingerprints are 32-bit and salted with the
// session id (so a collision in one session is not repeated in the next); the root digest
// is the full 64-bit one.
//
// These structs are the contract with node/wire, which maps them to the Cap'n Proto schema;
// wire_size() estimates the encoded size for the figures until the real codec measures it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "schedule/store.h"

namespace caesium::gossip {

struct SyncRoot {
  uint64_t digest = 0;  // VolumeStore::root_digest()
  uint64_t count = 0;   // records held, tombstones included
  friend bool operator==(const SyncRoot&, const SyncRoot&) = default;
};

struct SyncFingerprints {
  uint64_t prefix = 0;
  uint8_t prefix_bits = 0;
  uint8_t step_bits = 0;               // fingerprints.size() == 2^step_bits
  std::vector<uint32_t> fingerprints;  // sub-ranges in key-hash order
  friend bool operator==(const SyncFingerprints&, const SyncFingerprints&) = default;
};

struct SyncItem {
  uint64_t key_hash = 0;
  uint32_t fingerprint = 0;  // salted 32-bit fingerprint of the record's entry hash
  friend auto operator<=>(const SyncItem&, const SyncItem&) = default;
};

struct SyncItemList {
  uint64_t prefix = 0;
  uint8_t prefix_bits = 0;
  std::vector<SyncItem> items;  // sorted by (key_hash, fingerprint); every key hash in range
  friend bool operator==(const SyncItemList&, const SyncItemList&) = default;
};

struct SyncMessage {
  std::string volume;
  uint64_t session_id = 0;
  uint32_t seq = 0;          // 0, 1, 2, ... across both directions (strict alternation)
  bool sender_done = false;  // the sender has nothing queued after this message
  bool final = false;        // the sender will read no reply; the session is over
  std::optional<SyncRoot> root;
  std::vector<SyncFingerprints> fingerprints;
  std::vector<SyncItemList> item_lists;
  std::vector<uint64_t> wanted;
  std::vector<schedule::Record> records;
  friend bool operator==(const SyncMessage&, const SyncMessage&) = default;
};

// What a peer may send in one message; anything beyond is a protocol error, so that one
// session's memory stays bounded whatever the peer does.
struct SyncLimits {
  size_t max_fingerprints = size_t{1} << 18;  // over all ranges of one message
  unsigned max_step_bits = 12;                // 4096 fingerprints per range
  size_t max_items = size_t{1} << 18;         // over all item lists of one message
  size_t max_wanted = size_t{1} << 18;
  size_t max_records = size_t{1} << 16;
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{4} << 20;
  size_t max_origin_bytes = 255;
};

// Checks a message's shape (not its session fields): well-formed ranges, list lengths
// matching their step, sorted items inside their range, sizes within `limits`.  The error
// names the part and says what was wrong.
Status validate_shape(const SyncMessage& msg, const SyncLimits& limits);

// True when the message asks the receiver for an answer (root, fingerprints, item lists
// or wanted key hashes).  Records alone ask for nothing.
bool is_demanding(const SyncMessage& msg);

// Estimated encoded size in bytes.  The model is a compact binary encoding: 8 bytes of
// framing, varints for lengths, counts and small integers, fixed 8 bytes for hashes,
// session id and physical time, 4 bytes per fingerprint, 12 per item, and only the
// fields that are present.  Packed Cap'n Proto on these (mostly random) bytes lands
// within ~15% of it; node/wire re-measures with the real codec.
size_t wire_size(const SyncMessage& msg);
size_t wire_size(const schedule::Record& rec);
size_t wire_size_varint(uint64_t v);

}  // namespace caesium::gossip
