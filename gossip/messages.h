// The messages of the membership protocol (SWIM + Lifeguard), as plain values.
//
// These structs are the contract between gossip/membership (which produces and consumes
// them) and node/wire (which encodes them with the one Cap'n Proto schema).  They carry
// no sender identity: every frame on the wire is authenticated and names its sender
// (node id + gossip address), and the receiver passes that in as a `Peer`.
//
// Datagram messages travel over UDP and must encode to <= 1400 bytes per packet
// (including frame overhead); a Packet is one primary message plus piggybacked updates.
// PushPull travels over the stream channel (TCP), so it has no size limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace caesium::gossip {

enum class MemberState : uint8_t { kAlive = 0, kSuspect = 1, kDead = 2, kLeft = 3 };

// Reachable = alive or suspect in the local view (docs/design.md §3).
inline bool is_reachable(MemberState s) { return s == MemberState::kAlive || s == MemberState::kSuspect; }

// What a node is currently doing; gossiped, rate-limited (docs/design.md §3).
struct Load {
  uint32_t running = 0;     // handlers running now
  uint32_t queued = 0;      // invocations waiting for a slot
  uint32_t cpu_milli = 0;   // 1-minute load average x 1000
  bool operator==(const Load&) const = default;
};

// What a node can do; used for the default election priority and worker choice.
struct Capacity {
  uint32_t cores = 0;
  uint32_t memory_mb = 0;
  uint32_t max_running = 0;  // handler slots
  bool operator==(const Capacity&) const = default;
};

// The protocol version this build speaks, advertised in MemberMeta.  Carried, not
// enforced: a feature a peer might not understand is used only with peers at or above
// the version that introduced it.
//   1  the first release
//   2  digest push-pull (PushPull::digest_only)
//   3  claim batches (node/wire/caesium.capnp, ClaimBatch and ClaimReplyBatch)
inline constexpr uint32_t kProtocolVersion = 3;
inline constexpr uint32_t kDigestPushPullVersion = 2;
inline constexpr uint32_t kClaimBatchVersion = 3;
inline constexpr size_t kMaxUnfilledListed = 8;

// What a member advertises about itself.  Changing it needs a new incarnation.
struct MemberMeta {
  std::string stream_addr;        // TCP: anti-entropy, claims, dispatch
  std::string api_addr;           // HTTP API (for forwarding); may be empty
  int64_t priority = 0;           // master election priority (higher wins; id breaks ties)
  std::vector<std::string> tags;  // sorted, unique
  Capacity capacity;
  Load load;
  uint64_t config_epoch = 0;      // highest cluster-config epoch this node holds
  uint32_t protocol_version = kProtocolVersion;
  uint64_t boot_id = 0;           // random per process start: tells a restart from a long pause
  // Volumes this node replicates but has not yet copied from a replica that held them
  // before it (an anti-entropy session since it opened them): a replica change must not
  // drop the old replicas while a new one is still empty (Node::apply_config).  Sorted;
  // at most kMaxUnfilledListed names, or the one name "*" (not a valid volume name) for
  // "more than that: count every volume as unfilled".
  std::vector<std::string> unfilled_volumes;
  bool operator==(const MemberMeta&) const = default;
};

// --- Piggybacked updates (dissemination) ---------------------------------------------

struct Alive {
  std::string node;
  uint64_t incarnation = 0;
  std::string addr;  // gossip (UDP) address
  MemberMeta meta;
  bool operator==(const Alive&) const = default;
};

struct Suspect {
  std::string node;
  uint64_t incarnation = 0;
  std::string from;  // the suspecting node (Lifeguard counts independent confirmations)
  bool operator==(const Suspect&) const = default;
};

// Dead with from == node means the node left gracefully.
struct Dead {
  std::string node;
  uint64_t incarnation = 0;
  std::string from;
  bool operator==(const Dead&) const = default;
};

using Update = std::variant<Alive, Suspect, Dead>;

// --- Primary datagram messages (failure detection) -------------------------------------

struct Ping {
  uint32_t seq = 0;
  std::string target;  // the node id the sender believes it is pinging (misdirection check)
  bool operator==(const Ping&) const = default;
};

struct Ack {
  uint32_t seq = 0;
  bool operator==(const Ack&) const = default;
};

// Ask the receiver to ping `target` at `target_addr` on our behalf.
struct PingReq {
  uint32_t seq = 0;
  std::string target;
  std::string target_addr;
  bool want_nack = true;  // Lifeguard: relay answers Nack if the target does not ack in time
  bool operator==(const PingReq&) const = default;
};

struct Nack {
  uint32_t seq = 0;
  bool operator==(const Nack&) const = default;
};

// A packet carrying only piggybacked updates (the periodic gossip round).
struct GossipOnly {
  bool operator==(const GossipOnly&) const = default;
};

using Primary = std::variant<GossipOnly, Ping, Ack, PingReq, Nack>;

struct Packet {
  Primary primary;
  std::vector<Update> updates;
  bool operator==(const Packet&) const = default;
};

// --- Stream messages -------------------------------------------------------------------

struct MemberRecord {
  std::string node;
  std::string addr;
  uint64_t incarnation = 0;
  MemberState state = MemberState::kAlive;
  MemberMeta meta;
  bool operator==(const MemberRecord&) const = default;
};

// Full-state exchange: on join (to a seed) and periodically with one random member.
struct PushPull {
  bool join = false;         // sent by a joining node
  bool reply_wanted = true;  // false on the reply itself
  std::vector<MemberRecord> members;  // sorted by node id
  // A digest push-pull (protocol version 2): `members` holds the sender's own record and
  // then the sender's record of the receiver, and `digest` sums a hash of every record of the sender's full state (see
  // Membership::view_digest).  A receiver whose own digest matches — and which holds
  // nobody suspect — has nothing to exchange and stays silent; otherwise it answers with
  // a full PushPull{reply_wanted}, and the exchange goes on as a full one.
  bool digest_only = false;
  uint64_t digest = 0;
  bool operator==(const PushPull&) const = default;
};

// The identity of the sender of a received message, taken from the authenticated frame.
struct Peer {
  std::string id;
  std::string addr;  // its gossip (UDP) address
};

}  // namespace caesium::gossip
