// The message codec: plain structs <-> the one Cap'n Proto schema (caesium.capnp).
//
// Encoding is packed Cap'n Proto.  Decoding treats its input as hostile: any
// malformed, truncated, oversized or too-deep input is an Error, never a crash (the
// Cap'n Proto reader's exceptions are caught here and nowhere else), with traversal
// and nesting limits so a small packet cannot make the reader do unbounded work, and
// no list may declare more elements than the message has bytes (empty elements pack to
// nothing; no sender writes them).  An envelope from a newer sender whose body member
// we do not know decodes with `Body = Unknown`, and core messages of kinds we do not
// know are left out of the batch and counted in `unknown_messages`, so the caller can
// count and drop them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "gossip/messages.h"
#include "gossip/sync_messages.h"
#include "schedule/fire_messages.h"

namespace caesium::wire {

inline constexpr uint16_t kProtocolVersion = 1;

struct ConfigRequest {
  uint64_t epoch = 0;
  bool operator==(const ConfigRequest&) const = default;
};

struct ConfigDoc {
  uint64_t epoch = 0;
  std::string document;
  bool operator==(const ConfigDoc&) const = default;
};

// A vote of the agreement on each epoch's config (node/core/node_config_vote.cpp).
struct ConfigVote {
  enum class Kind : uint8_t { kPrepare = 0, kPromise = 1, kAccept = 2, kAccepted = 3, kNack = 4 };
  Kind kind = Kind::kPrepare;
  uint64_t epoch = 0;  // the epoch being decided
  uint64_t ballot = 0;
  std::string proposer;
  uint64_t accepted_ballot = 0;  // kPromise: the accepted value's (0: none); kNack: the promised one
  std::string accepted_proposer;
  std::string document;  // kAccept: the value; kPromise: the accepted value
  bool operator==(const ConfigVote&) const = default;
};

// Replication push: records just written on the sender, for one volume.
struct StorePush {
  std::string volume;
  std::vector<schedule::Record> records;
  bool want_ack = false;  // answer with a StoreAck once durable (API writes with ?w=N)
  bool operator==(const StorePush&) const = default;
};

struct StoreAck {
  std::string volume;
  std::vector<std::pair<std::string, schedule::Version>> records;  // key, version now durable
  bool operator==(const StoreAck&) const = default;
};

// A core message the receiver does not understand (from a newer version).
struct UnknownMessage {
  bool operator==(const UnknownMessage&) const = default;
};

using CoreMessage =
    std::variant<UnknownMessage, schedule::Claim, schedule::ClaimReply, schedule::Release,
                 schedule::Dispatch, schedule::DispatchReply, schedule::Revoke,
                 schedule::RevokeReply, ConfigRequest, ConfigDoc, StorePush, gossip::SyncMessage, StoreAck,
                 ConfigVote, schedule::Go, schedule::GoAsk, schedule::GoAnswer>;

struct UnknownBody {
  bool operator==(const UnknownBody&) const = default;
};

using Body = std::variant<UnknownBody, gossip::Packet, gossip::PushPull, std::vector<CoreMessage>>;

struct Envelope {
  uint16_t version = kProtocolVersion;
  std::string sender;       // node id
  std::string sender_addr;  // gossip address
  int64_t sent_utc_ms = 0;
  uint64_t seq = 0;
  uint64_t boot_id = 0;
  Body body;
  // Core messages of a kind this version does not know (from a newer sender): decode()
  // leaves them out of the batch and counts them here; encode() ignores this field and
  // any UnknownMessage in a batch.
  uint32_t unknown_messages = 0;
  bool operator==(const Envelope&) const = default;
};

// Limits applied when decoding untrusted bytes.
inline constexpr size_t kMaxEncodedBytes = 16 * 1024 * 1024;

// batch_claims: write each run of consecutive claims of one claimant for one volume and
// config (of consecutive claim replies for one volume) as one ClaimBatch (ClaimReplyBatch),
// for a receiver at gossip::kClaimBatchVersion or later.  decode() reads both forms as the
// same messages.
std::string encode(const Envelope& envelope, bool batch_claims = false);
Result<Envelope> decode(std::string_view bytes);

}  // namespace caesium::wire
