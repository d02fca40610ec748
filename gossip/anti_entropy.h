// Anti-entropy: a sans-IO reconciliation session between two replicas of one volume.
//
// The two sides walk the key-hash prefix tree of their digests (schedule/digest.h) down
// only where they differ, taking turns, Negentropy-style:
//
//   I -> R  root digest + count                     (equal stores: R answers "done": 1 RT)
//   R -> I  fingerprints of 2^b sub-ranges of each range that differs
//   I -> R  for each sub-range that differs: its fingerprints one step deeper, or — when
//           the side holds few items there (<= list_threshold) — the list of its items
//           (key hash + 32-bit fingerprint, 12 bytes)
//   ...     a side that receives an item list sends the records the peer lacks or holds in
//           another version, and asks ("wanted") for the key hashes it lacks or holds in
//           another version; the answer to "wanted" is given after merging what came with
//           it, so it is always the winning record and one exchange settles both ways.
//
// The step b is chosen by the side that describes a range, from its own count c there:
// b = the bits that bring the children to <= leaf_target items, or, when that is more
// than single_step_bits, about half of it (plus one), so that two steps reach the lists.
// With the defaults, 10 differences among 1M records take 3 round trips and ~10 KiB
// (`caesium-bench sync`).  Where one side's range is empty the other sends its records
// at once (an empty fingerprint is recognised), so a new replica is filled by paging
// records, max_message_bytes per message.
//
// Termination.  Messages alternate strictly; each carries sender_done (nothing queued) and
// final (the sender reads no reply).  A side sends final when it is done, its message asks
// for nothing, and the peer's last message said sender_done; a final message gets no reply.
// Records that lose against local state in a final message are not sent back (they can only
// come from concurrent writes; the next session repairs them).
//
// Safety.  The session holds no pointer into the store between messages: every message is
// computed from the store as it is then, so local writes in between are safe (a difference
// they cause is found by a later session).  Every record goes through VolumeStore::merge,
// so any subset of a session's messages leaves both stores valid: a session can be dropped
// at any time.  A peer's message is checked (validate_shape, session fields, sequence) and
// any violation fails the session with an error; queued work is bounded
// (max_pending_work), so memory per session is bounded whatever the peer sends.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"
#include "gossip/sync_messages.h"
#include "schedule/store.h"

namespace caesium::gossip {

struct SyncOptions {
  size_t leaf_target = 24;            // descend until ranges hold about this many records
  size_t list_threshold = 48;         // list a range's items when holding at most this many
                                      // (2x the target: a range that drew more than the mean
                                      // is still listed, not split again, which would cost a
                                      // round trip: P(Poisson(15) > 48) ~ 1e-11)
  unsigned single_step_bits = 10;     // one step of up to 2^10 sub-ranges, else two steps
  size_t max_message_bytes = size_t{1} << 20;  // soft budget per outgoing message
  size_t max_pending_work = size_t{1} << 20;   // queued ranges + key hashes + items
  uint32_t max_messages = 100'000;    // per session, both directions
  SyncLimits limits;                  // what the peer may send per message
};

struct SyncStats {
  uint32_t messages_sent = 0;
  uint32_t messages_received = 0;
  uint64_t bytes_sent = 0;        // wire_size() of each message
  uint64_t bytes_received = 0;
  uint64_t records_sent = 0;
  uint64_t record_bytes_sent = 0; // the part of bytes_sent that is records (wire_size)
  uint64_t records_received = 0;
  uint64_t records_applied = 0;   // merges that changed the local store
  uint64_t fingerprints_sent = 0;
  uint64_t items_sent = 0;
  uint64_t wanted_sent = 0;
  uint64_t bounces_dropped = 0;   // stale records seen in a final message (left to next session)
  // Both directions counted: messages / 2, rounded up.
  uint32_t round_trips() const { return (messages_sent + messages_received + 1) / 2; }
};

class SyncSession {
 public:
  enum class Role : uint8_t { kInitiator, kResponder };

  // The store must outlive the session.  The initiator's session_id should be random (it
  // salts the fingerprints, so a 32-bit collision in one session is not repeated in the
  // next); a responder is created for the session_id of the opening message it received
  // (seq 0, with a root) and then fed that message.
  SyncSession(Role role, schedule::VolumeStore* store, uint64_t session_id, SyncOptions options = {});

  // Initiator only, once, first: the opening message.
  SyncMessage start(int64_t now_utc_ms);

  // One message from the peer.  Returns the reply to send, nullopt when nothing is to be
  // sent (the session is then done), or an error when the peer broke the protocol (the
  // session is then failed and done; drop it).  REQUIRES: !done().
  Result<std::optional<SyncMessage>> on_message(const SyncMessage& msg, int64_t now_utc_ms);

  bool done() const { return state_ != State::kRunning; }
  bool failed() const { return state_ == State::kFailed; }
  const SyncStats& stats() const { return stats_; }
  uint64_t session_id() const { return session_id_; }
  Role role() const { return role_; }

 private:
  enum class State : uint8_t { kRunning, kDone, kFailed };

  // Work queued for the next outgoing message(s), done lazily against the store as it is
  // when the message is built.
  struct Describe {  // send fingerprints of sub-ranges, or the item list
    schedule::HashRange range;
  };
  struct SendRange {  // send own records in range except those the peer listed identically
    schedule::HashRange range;
    uint64_t next_key_hash = 0;
    std::vector<SyncItem> peer_items;  // sorted
  };
  struct SendKeyHashes {  // answer "wanted"
    std::vector<uint64_t> key_hashes;
    size_t next = 0;
    std::vector<uint64_t> echo_entry_hashes;  // sorted: what the peer just sent us
  };
  struct SendKey {  // a record the peer sent is older than ours: send ours back
    std::string key;
  };
  using Task = std::variant<Describe, SendRange, SendKeyHashes, SendKey>;

  Status check_session_fields(const SyncMessage& msg) const;
  // Merges the records and queues the work the message asks for.
  Status absorb(const SyncMessage& msg, int64_t now_utc_ms);
  Status on_root(const SyncRoot& root);
  Status on_fingerprints(const SyncFingerprints& f);
  Status on_item_list(const SyncItemList& l);
  Status push(Task task);
  Status too_much_work() const;
  SyncMessage build_message();
  // Each adds to `out`; returns true when the task is finished (false: budget reached).
  bool run(Describe& t, SyncMessage& out, size_t& used);
  bool run(SendRange& t, SyncMessage& out, size_t& used);
  bool run(SendKeyHashes& t, SyncMessage& out, size_t& used);
  bool run(SendKey& t, SyncMessage& out, size_t& used);
  void add_record(const schedule::RecordView& view, SyncMessage& out, size_t& used);
  unsigned step_bits_for(uint64_t count, unsigned prefix_bits) const;
  uint32_t salted(uint64_t hash) const;
  static size_t weight(const Task& task);
  SyncMessage sent(SyncMessage msg);

  Role role_;
  schedule::VolumeStore* store_;
  uint64_t session_id_;
  SyncOptions options_;
  State state_ = State::kRunning;
  bool started_ = false;
  bool peer_done_ = false;
  uint32_t next_seq_ = 0;
  uint32_t empty_fingerprint_ = 0;
  std::deque<Task> tasks_;
  std::vector<uint64_t> wanted_;       // key hashes to ask for in the next message
  size_t pending_work_ = 0;
  // Per incoming message: entry hashes of records just merged or confirmed, so that an
  // answer to "wanted" does not echo them back.
  std::vector<uint64_t> echo_;
  SyncStats stats_;
};

}  // namespace caesium::gossip
