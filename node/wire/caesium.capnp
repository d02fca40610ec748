# The one schema for every message Caesium puts on the wire (docs/design.md §8).
#
# Every UDP datagram and every TCP frame carries, after authenticated decryption
# (node/wire/frame.h), exactly one Envelope.  Datagrams carry gossip packets (<= 1400
# bytes including the frame); stream frames carry push-pull state or a batch of core
# messages (anti-entropy, replication, claims, dispatch).
#
# Evolution rules: never renumber or retype a field; add fields at the end with new
# ordinals; add union members at the end.  `version` is the protocol version of the
# sender; a receiver drops (and counts) envelopes whose version it cannot speak, and
# bodies whose union member it does not know.
@0xf69df80109a747ea;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("caesium::wire::capnp");

struct Envelope {
  version @0 :UInt16;
  sender @1 :Text;          # node id
  senderAddr @2 :Text;      # its gossip (UDP) address
  sentUtcMs @3 :Int64;      # sender's realtime clock (replay window, skew estimate)
  body :union {
    unknown @4 :Void;       # what a newer sender's unknown member decodes as
    packet @5 :GossipPacket;
    pushPull @6 :PushPull;
    batch @7 :List(CoreMessage);
  }
  seq @8 :UInt64;           # per (sender boot, receiver, channel) sequence: replay window
  bootId @9 :UInt64;        # sender's boot id (also in the frame nonce)
}

# --- Membership (gossip/messages.h) ----------------------------------------------------

enum MemberState { alive @0; suspect @1; dead @2; left @3; }

struct Load { running @0 :UInt32; queued @1 :UInt32; cpuMilli @2 :UInt32; }
struct Capacity { cores @0 :UInt32; memoryMb @1 :UInt32; maxRunning @2 :UInt32; }

struct MemberMeta {
  streamAddr @0 :Text;
  apiAddr @1 :Text;
  priority @2 :Int64;
  tags @3 :List(Text);
  capacity @4 :Capacity;
  load @5 :Load;
  configEpoch @6 :UInt64;
  protocolVersion @7 :UInt32;
  bootId @8 :UInt64;
  unfilledVolumes @9 :List(Text);
}

struct Alive { node @0 :Text; incarnation @1 :UInt64; addr @2 :Text; meta @3 :MemberMeta; }
struct Suspect { node @0 :Text; incarnation @1 :UInt64; from @2 :Text; }
struct Dead { node @0 :Text; incarnation @1 :UInt64; from @2 :Text; }

struct Update {
  union {
    alive @0 :Alive;
    suspect @1 :Suspect;
    dead @2 :Dead;
  }
}

struct GossipPacket {
  primary :union {
    gossipOnly @0 :Void;
    ping @1 :Ping;
    ack @2 :Ack;
    pingReq @3 :PingReq;
    nack @4 :Nack;
  }
  updates @5 :List(Update);
}

struct Ping { seq @0 :UInt32; target @1 :Text; }
struct Ack { seq @0 :UInt32; }
struct PingReq { seq @0 :UInt32; target @1 :Text; targetAddr @2 :Text; wantNack @3 :Bool; }
struct Nack { seq @0 :UInt32; }

struct MemberRecord {
  node @0 :Text;
  addr @1 :Text;
  incarnation @2 :UInt64;
  state @3 :MemberState;
  meta @4 :MemberMeta;
}

struct PushPull {
  join @0 :Bool;
  replyWanted @1 :Bool;
  members @2 :List(MemberRecord);
  digestOnly @3 :Bool;   # protocol version 2: members is the sender alone; see gossip/messages.h
  digest @4 :UInt64;
}

# --- Core messages (stream channel) ------------------------------------------------------

struct CoreMessage {
  union {
    unknown @0 :Void;
    storePush @1 :StorePush;
    claim @2 :Claim;
    claimReply @3 :ClaimReply;
    release @4 :Release;
    dispatch @5 :Dispatch;
    dispatchReply @6 :DispatchReply;
    revoke @7 :Revoke;
    revokeReply @8 :RevokeReply;
    configRequest @9 :ConfigRequest;
    configDoc @10 :ConfigDoc;
    sync @11 :SyncMessage;
    storeAck @12 :StoreAck;
    configVote @13 :ConfigVote;
    go @14 :Go;
    goAsk @15 :GoAsk;
    goAnswer @16 :GoAnswer;
    claimBatch @17 :ClaimBatch;            # from senders at gossip protocol version 3
    claimReplyBatch @18 :ClaimReplyBatch;  # likewise
  }
}

# Volume store records (schedule/store.h).
struct Version { physicalMs @0 :Int64; logical @1 :UInt32; origin @2 :Text; }

struct Record {
  key @0 :Data;
  version @1 :Version;
  value :union {
    tombstone @2 :Void;
    data @3 :Data;
  }
}

# Replication push: records just written on the sender, for one volume.
struct StorePush {
  volume @0 :Text;
  records @1 :List(Record);
  wantAck @2 :Bool;         # the writer waits for replicas (API ?w=N): answer with a StoreAck
}

# "These records are durable here": the answer to a StorePush that wanted one.
struct StoreAck {
  volume @0 :Text;
  keys @1 :List(Data);
  versions @2 :List(Version);
}

# Firing (schedule/fire_messages.h).
struct OccurrenceId { entryKey @0 :Text; scheduledUtcMs @1 :Int64; }
struct ProcessId { node @0 :Text; boot @1 :UInt64; }

struct AttemptInfo {
  attempt @0 :UInt32;
  fireId @1 :Text;
  worker @2 :Text;
  issuedUtcMs @3 :Int64;
  run @4 :UInt32 = 1;       # the run it carries out (AttemptInfo::run); 0 is read as 1
}

enum ClaimKind { claim @0; prepare @1; accept @2; check @3; }

struct Claim {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  claimant @2 :ProcessId;
  worker @3 :Text;
  fireUtcMs @4 :Int64;
  kind @5 :ClaimKind;
  round @6 :UInt64;
  attempt @7 :AttemptInfo;
  configEpoch @8 :UInt64;  # the claimant's cluster config epoch (0: unknown)
  setsHash @9 :UInt64;     # hash of the volume's replica sets in that config
  entryPhysicalMs @10 :Int64;  # the version of the entry record the claimant decides under
  entryLogical @11 :UInt32;
  entryOrigin @12 :Text;
  lease @13 :UInt64;           # the claimant's lease on this round's answers (echoed)
  forbidOverlap @14 :Bool;     # the entry is at-most-once with overlap = forbid
}

enum ClaimOutcome { granted @0; held @1; notDue @2; abstain @3; stale @4; superseded @5; overlap @6; ran @7; }

struct ClaimReply {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  outcome @2 :ClaimOutcome;
  holder @3 :ProcessId;
  retryAfterMs @4 :Int64;
  holderAlive @5 :Bool;
  kind @6 :ClaimKind;
  round @7 :UInt64;
  promisedRound @8 :UInt64;
  hasAccepted @9 :Bool;
  acceptedRound @10 :UInt64;
  acceptedBy @11 :ProcessId;
  accepted @12 :AttemptInfo;
  lease @13 :UInt64;
  went @14 :Bool;              # kPrepare: this replica said yes to a go ask of o (ClaimReply::went)
}

# Consecutive claims of one claimant for one volume under one config, sent as one message
# (a master's claims of a loop turn to one replica): the fields they share are written once
# and left unset in each item.  A receiver reads a batch as the claims it carries, in order,
# each answered on its own (docs/firing.md, Batches).  Sent only to peers that advertise
# gossip protocol version 3 or later.
struct ClaimBatch {
  volume @0 :Text;
  claimant @1 :ProcessId;
  configEpoch @2 :UInt64;
  setsHash @3 :UInt64;
  claims @4 :List(Claim);
}

# Consecutive answers for one volume (a replica's answers to one claimant's batch).
struct ClaimReplyBatch {
  volume @0 :Text;
  replies @1 :List(ClaimReply);
}

struct Release { volume @0 :Text; occ @1 :OccurrenceId; claimant @2 :ProcessId; }

# The owner's go (schedule/fire_messages.h, Go): its prepared attempts at the receiver with
# run_at <= upToUtcMs may start, except the fenced ones.
struct Go { owner @0 :ProcessId; upToUtcMs @1 :Int64; fenced @2 :List(Text); }

# The replicas' go (schedule/fire_messages.h, GoAsk): may these prepared runs start?
struct GoAskItem { volume @0 :Text; occ @1 :OccurrenceId; fireId @2 :Text; runAtUtcMs @3 :Int64; }
struct GoAsk { items @0 :List(GoAskItem); }
enum GoVerdict { yes @0; notYet @1; no @2; }
struct GoAnswerItem { fireId @0 :Text; verdict @1 :GoVerdict; }
struct GoAnswer { items @0 :List(GoAnswerItem); }

struct Dispatch {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  owner @2 :ProcessId;
  fireId @3 :Text;
  attempt @4 :UInt32;
  atMostOnce @5 :Bool;
  possibleDuplicate @6 :Bool;
  acceptByUtcMs @7 :Int64;
  handler @8 :Text;
  payload @9 :Data;
  sequence @10 :UInt64;
  issuedUtcMs @11 :Int64;   # first dispatch of this fire id (owner's clock): amnesia check at the worker
  runAtUtcMs @12 :Int64;    # prepared: start no earlier than this (worker's clock and a majority's); 0 = at once
  timeoutMs @13 :Int64;     # the entry's timeout for the handler; 0 = the handler's own
  run @14 :UInt32;          # which run of the occurrence (a retry: > 1); 0 = 1
  runs @15 :UInt32;         # the most runs the occurrence may have (retry attempts; 1 without); 0 = not said
  entryPhysicalMs @16 :Int64;  # the entry version the attempt was decided under (0: not said)
  entryLogical @17 :UInt32;
  entryOrigin @18 :Text;
  workerBoot @19 :UInt64;   # the worker's boot the owner addressed at the first issue (0: not known)
  onFailure @20 :Text;      # the entry's on_failure handler ("" = none) under the definition dispatched with
}

enum DispatchOutcome { accepted @0; refused @1; busy @2; }

struct DispatchReply {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  fireId @2 :Text;
  outcome @3 :DispatchOutcome;
  reason @4 :Text;
  workerBoot @5 :UInt64;    # boot id of the process that accepted (0: not said, an older sender)
}

struct Revoke {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  fireId @2 :Text;
  issuedUtcMs @3 :Int64;
  runAtUtcMs @4 :Int64;     # prepared: the revoked dispatch's run_at (0: not prepared, or not said)
  workerBoot @5 :UInt64;    # the revoked dispatch's workerBoot
}

enum RevokeOutcome { revoked @0; accepted @1; completed @2; unknown @3; }

struct RevokeReply {
  volume @0 :Text;
  occ @1 :OccurrenceId;
  fireId @2 :Text;
  outcome @3 :RevokeOutcome;
  workerBoot @4 :UInt64;    # accepted / completed: boot id of the process that accepted (0: not said)
}

# Cluster configuration (docs/design.md §4): a node that sees a higher epoch advertised in
# gossip asks for the document.
struct ConfigRequest { epoch @0 :UInt64; }
struct ConfigDoc { epoch @0 :UInt64; document @1 :Data; }

# Agreeing on the config of an epoch before anyone adopts it (docs/config.md, *How a
# change is agreed*): single-decree Paxos among the nodes of the current config, one
# decision per epoch.  Ballots order by (ballot, proposer).
struct ConfigVote {
  kind @0 :UInt8;              # 0 prepare, 1 promise, 2 accept, 3 accepted, 4 nack
  epoch @1 :UInt64;            # the epoch being decided
  ballot @2 :UInt64;
  proposer @3 :Text;
  acceptedBallot @4 :UInt64;   # promise: of the value accepted (0: none); nack: the ballot promised
  acceptedProposer @5 :Text;
  document @6 :Data;           # accept: the value; promise: the value accepted, if any
}

# Anti-entropy (gossip/sync_messages.h): range-based reconciliation over the store's
# key-hash ordered digest, one level per half round trip, both sides descending.
struct SyncMessage {
  volume @0 :Text;
  sessionId @1 :UInt64;
  seq @2 :UInt32;
  senderDone @3 :Bool;
  final @4 :Bool;
  root :union {
    none @5 :Void;
    value @6 :SyncRoot;
  }
  fingerprints @7 :List(SyncFingerprints);
  itemLists @8 :List(SyncItemList);
  wanted @9 :List(UInt64);
  records @10 :List(Record);
}

struct SyncRoot { digest @0 :UInt64; count @1 :UInt64; }

struct SyncFingerprints {
  prefix @0 :UInt64;
  prefixBits @1 :UInt8;
  stepBits @2 :UInt8;
  fingerprints @3 :List(UInt32);
}

struct SyncItem { keyHash @0 :UInt64; fingerprint @1 :UInt32; }

struct SyncItemList {
  prefix @0 :UInt64;
  prefixBits @1 :UInt8;
  items @2 :List(SyncItem);
}
