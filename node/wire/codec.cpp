// Struct <-> Cap'n Proto conversion.  One `put_*` (build) and one `get_*` (read) per
// message type, kept side by side so a field added to one is visibly missing from the
// other.
#include "node/wire/codec.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/exception.h>
#include <kj/io.h>

#include "wire/caesium.capnp.h"

namespace caesium::wire {
namespace cp = caesium::wire::capnp;
namespace {

// --- helpers ---------------------------------------------------------------------------

::capnp::Text::Reader text(const std::string& s) { return {s.data(), s.size()}; }
::capnp::Data::Reader data(const std::string& s) {
  return {reinterpret_cast<const kj::byte*>(s.data()), s.size()};
}
std::string str(::capnp::Text::Reader r) { return {r.cStr(), r.size()}; }
std::string str(::capnp::Data::Reader r) {
  return {reinterpret_cast<const char*>(r.begin()), r.size()};
}

// List elements left to the message being decoded (decode() sets it to the input's
// size).  Every element a sender of this schema writes holds a non-zero word (a
// pointer, a name, a union tag), and a non-zero word packs to at least two bytes; an
// empty element packs to nothing.  So a list longer than its message is forged: a few
// bytes could declare thousands of empty elements, within the reader's traversal limit
// (it charges one word each), which decode to messages that encode again to more words
// than that limit allows for their size (frame_fuzz, crash 4a60bb75: 29 bytes, 6,720
// empty batch elements).
thread_local size_t t_elements_left = 0;

class TooManyElements : public std::exception {
 public:
  const char* what() const noexcept override { return "a list declares more elements than the message has bytes"; }
};

// Counts the list's elements against the budget; throws TooManyElements (a
// std::exception, which decode() turns into an Error).
template <typename List>
List counted(List list) {
  if (list.size() > t_elements_left) throw TooManyElements();
  t_elements_left -= list.size();
  return list;
}

class StringOutputStream final : public kj::OutputStream {
 public:
  explicit StringOutputStream(std::string& out) : out_(out) {}
  void write(const void* buffer, size_t size) override {
    out_.append(static_cast<const char*>(buffer), size);
  }

 private:
  std::string& out_;
};

// --- membership ------------------------------------------------------------------------

void put(cp::MemberMeta::Builder b, const gossip::MemberMeta& m) {
  b.setStreamAddr(text(m.stream_addr));
  b.setApiAddr(text(m.api_addr));
  b.setPriority(m.priority);
  auto tags = b.initTags(static_cast<unsigned>(m.tags.size()));
  for (unsigned i = 0; i < m.tags.size(); ++i) tags.set(i, text(m.tags[i]));
  auto cap = b.initCapacity();
  cap.setCores(m.capacity.cores);
  cap.setMemoryMb(m.capacity.memory_mb);
  cap.setMaxRunning(m.capacity.max_running);
  auto load = b.initLoad();
  load.setRunning(m.load.running);
  load.setQueued(m.load.queued);
  load.setCpuMilli(m.load.cpu_milli);
  b.setConfigEpoch(m.config_epoch);
  b.setProtocolVersion(m.protocol_version);
  b.setBootId(m.boot_id);
  auto unfilled = b.initUnfilledVolumes(static_cast<unsigned>(m.unfilled_volumes.size()));
  for (unsigned i = 0; i < m.unfilled_volumes.size(); ++i) unfilled.set(i, text(m.unfilled_volumes[i]));
}

gossip::MemberMeta get(cp::MemberMeta::Reader r) {
  gossip::MemberMeta m;
  m.stream_addr = str(r.getStreamAddr());
  m.api_addr = str(r.getApiAddr());
  m.priority = r.getPriority();
  for (auto t : counted(r.getTags())) m.tags.push_back(str(t));
  m.capacity = {r.getCapacity().getCores(), r.getCapacity().getMemoryMb(),
                r.getCapacity().getMaxRunning()};
  m.load = {r.getLoad().getRunning(), r.getLoad().getQueued(), r.getLoad().getCpuMilli()};
  m.config_epoch = r.getConfigEpoch();
  m.protocol_version = r.getProtocolVersion();
  m.boot_id = r.getBootId();
  for (auto v : counted(r.getUnfilledVolumes())) m.unfilled_volumes.push_back(str(v));
  return m;
}

cp::MemberState put_state(gossip::MemberState s) {
  switch (s) {
    case gossip::MemberState::kAlive: return cp::MemberState::ALIVE;
    case gossip::MemberState::kSuspect: return cp::MemberState::SUSPECT;
    case gossip::MemberState::kDead: return cp::MemberState::DEAD;
    case gossip::MemberState::kLeft: return cp::MemberState::LEFT;
  }
  return cp::MemberState::DEAD;
}

Result<gossip::MemberState> get_state(cp::MemberState s) {
  switch (s) {
    case cp::MemberState::ALIVE: return gossip::MemberState::kAlive;
    case cp::MemberState::SUSPECT: return gossip::MemberState::kSuspect;
    case cp::MemberState::DEAD: return gossip::MemberState::kDead;
    case cp::MemberState::LEFT: return gossip::MemberState::kLeft;
  }
  return Error("unknown member state " + std::to_string(static_cast<int>(s)));
}

void put(cp::Update::Builder b, const gossip::Update& u) {
  if (const auto* a = std::get_if<gossip::Alive>(&u)) {
    auto x = b.initAlive();
    x.setNode(text(a->node));
    x.setIncarnation(a->incarnation);
    x.setAddr(text(a->addr));
    put(x.initMeta(), a->meta);
  } else if (const auto* s = std::get_if<gossip::Suspect>(&u)) {
    auto x = b.initSuspect();
    x.setNode(text(s->node));
    x.setIncarnation(s->incarnation);
    x.setFrom(text(s->from));
  } else {
    const auto& d = std::get<gossip::Dead>(u);
    auto x = b.initDead();
    x.setNode(text(d.node));
    x.setIncarnation(d.incarnation);
    x.setFrom(text(d.from));
  }
}

Result<gossip::Update> get(cp::Update::Reader r) {
  switch (r.which()) {
    case cp::Update::ALIVE: {
      auto x = r.getAlive();
      return gossip::Update{gossip::Alive{str(x.getNode()), x.getIncarnation(), str(x.getAddr()),
                                          get(x.getMeta())}};
    }
    case cp::Update::SUSPECT: {
      auto x = r.getSuspect();
      return gossip::Update{gossip::Suspect{str(x.getNode()), x.getIncarnation(), str(x.getFrom())}};
    }
    case cp::Update::DEAD: {
      auto x = r.getDead();
      return gossip::Update{gossip::Dead{str(x.getNode()), x.getIncarnation(), str(x.getFrom())}};
    }
  }
  return Error("unknown membership update kind");
}

void put(cp::GossipPacket::Builder b, const gossip::Packet& p) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, gossip::GossipOnly>) {
          b.getPrimary().setGossipOnly();
        } else if constexpr (std::is_same_v<T, gossip::Ping>) {
          auto x = b.getPrimary().initPing();
          x.setSeq(m.seq);
          x.setTarget(text(m.target));
        } else if constexpr (std::is_same_v<T, gossip::Ack>) {
          b.getPrimary().initAck().setSeq(m.seq);
        } else if constexpr (std::is_same_v<T, gossip::PingReq>) {
          auto x = b.getPrimary().initPingReq();
          x.setSeq(m.seq);
          x.setTarget(text(m.target));
          x.setTargetAddr(text(m.target_addr));
          x.setWantNack(m.want_nack);
        } else {
          b.getPrimary().initNack().setSeq(m.seq);
        }
      },
      p.primary);
  auto updates = b.initUpdates(static_cast<unsigned>(p.updates.size()));
  for (unsigned i = 0; i < p.updates.size(); ++i) put(updates[i], p.updates[i]);
}

Result<gossip::Packet> get(cp::GossipPacket::Reader r) {
  gossip::Packet p;
  auto prim = r.getPrimary();
  switch (prim.which()) {
    case cp::GossipPacket::Primary::GOSSIP_ONLY: p.primary = gossip::GossipOnly{}; break;
    case cp::GossipPacket::Primary::PING:
      p.primary = gossip::Ping{prim.getPing().getSeq(), str(prim.getPing().getTarget())};
      break;
    case cp::GossipPacket::Primary::ACK: p.primary = gossip::Ack{prim.getAck().getSeq()}; break;
    case cp::GossipPacket::Primary::PING_REQ: {
      auto x = prim.getPingReq();
      p.primary = gossip::PingReq{x.getSeq(), str(x.getTarget()), str(x.getTargetAddr()), x.getWantNack()};
      break;
    }
    case cp::GossipPacket::Primary::NACK: p.primary = gossip::Nack{prim.getNack().getSeq()}; break;
    default: return Error("unknown gossip primary message");
  }
  for (auto u : counted(r.getUpdates())) {
    auto update = get(u);
    if (!update) return update.error();
    p.updates.push_back(std::move(*update));
  }
  return p;
}

void put(cp::PushPull::Builder b, const gossip::PushPull& pp) {
  b.setJoin(pp.join);
  b.setReplyWanted(pp.reply_wanted);
  b.setDigestOnly(pp.digest_only);
  b.setDigest(pp.digest);
  auto members = b.initMembers(static_cast<unsigned>(pp.members.size()));
  for (unsigned i = 0; i < pp.members.size(); ++i) {
    const auto& m = pp.members[i];
    auto x = members[i];
    x.setNode(text(m.node));
    x.setAddr(text(m.addr));
    x.setIncarnation(m.incarnation);
    x.setState(put_state(m.state));
    put(x.initMeta(), m.meta);
  }
}

Result<gossip::PushPull> get(cp::PushPull::Reader r) {
  gossip::PushPull pp;
  pp.join = r.getJoin();
  pp.reply_wanted = r.getReplyWanted();
  pp.digest_only = r.getDigestOnly();
  pp.digest = r.getDigest();
  for (auto x : counted(r.getMembers())) {
    auto state = get_state(x.getState());
    if (!state) return state.error();
    pp.members.push_back(gossip::MemberRecord{str(x.getNode()), str(x.getAddr()), x.getIncarnation(),
                                              *state, get(x.getMeta())});
  }
  return pp;
}

// --- store records and anti-entropy -------------------------------------------------------

void put(cp::Record::Builder b, const schedule::Record& r) {
  b.setKey(data(r.key));
  auto v = b.initVersion();
  v.setPhysicalMs(r.version.physical_ms);
  v.setLogical(r.version.logical);
  v.setOrigin(text(r.version.origin));
  if (r.value) {
    b.getValue().setData(data(*r.value));
  } else {
    b.getValue().setTombstone();
  }
}

Result<schedule::Record> get(cp::Record::Reader r) {
  schedule::Record out;
  out.key = str(r.getKey());
  out.version = {r.getVersion().getPhysicalMs(), r.getVersion().getLogical(), str(r.getVersion().getOrigin())};
  switch (r.getValue().which()) {
    case cp::Record::Value::TOMBSTONE: break;
    case cp::Record::Value::DATA: out.value = str(r.getValue().getData()); break;
    default: return Error("record with an unknown value kind");
  }
  return out;
}

void put(cp::SyncMessage::Builder b, const gossip::SyncMessage& m) {
  b.setVolume(text(m.volume));
  b.setSessionId(m.session_id);
  b.setSeq(m.seq);
  b.setSenderDone(m.sender_done);
  b.setFinal(m.final);
  if (m.root) {
    auto root = b.getRoot().initValue();
    root.setDigest(m.root->digest);
    root.setCount(m.root->count);
  } else {
    b.getRoot().setNone();
  }
  auto fps = b.initFingerprints(static_cast<unsigned>(m.fingerprints.size()));
  for (unsigned i = 0; i < m.fingerprints.size(); ++i) {
    const auto& f = m.fingerprints[i];
    fps[i].setPrefix(f.prefix);
    fps[i].setPrefixBits(f.prefix_bits);
    fps[i].setStepBits(f.step_bits);
    auto list = fps[i].initFingerprints(static_cast<unsigned>(f.fingerprints.size()));
    for (unsigned k = 0; k < f.fingerprints.size(); ++k) list.set(k, f.fingerprints[k]);
  }
  auto lists = b.initItemLists(static_cast<unsigned>(m.item_lists.size()));
  for (unsigned i = 0; i < m.item_lists.size(); ++i) {
    const auto& l = m.item_lists[i];
    lists[i].setPrefix(l.prefix);
    lists[i].setPrefixBits(l.prefix_bits);
    auto items = lists[i].initItems(static_cast<unsigned>(l.items.size()));
    for (unsigned k = 0; k < l.items.size(); ++k) {
      items[k].setKeyHash(l.items[k].key_hash);
      items[k].setFingerprint(l.items[k].fingerprint);
    }
  }
  auto wanted = b.initWanted(static_cast<unsigned>(m.wanted.size()));
  for (unsigned i = 0; i < m.wanted.size(); ++i) wanted.set(i, m.wanted[i]);
  auto records = b.initRecords(static_cast<unsigned>(m.records.size()));
  for (unsigned i = 0; i < m.records.size(); ++i) put(records[i], m.records[i]);
}

Result<gossip::SyncMessage> get(cp::SyncMessage::Reader r) {
  gossip::SyncMessage m;
  m.volume = str(r.getVolume());
  m.session_id = r.getSessionId();
  m.seq = r.getSeq();
  m.sender_done = r.getSenderDone();
  m.final = r.getFinal();
  if (r.getRoot().isValue()) m.root = gossip::SyncRoot{r.getRoot().getValue().getDigest(), r.getRoot().getValue().getCount()};
  for (auto f : counted(r.getFingerprints())) {
    gossip::SyncFingerprints x;
    x.prefix = f.getPrefix();
    x.prefix_bits = f.getPrefixBits();
    x.step_bits = f.getStepBits();
    x.fingerprints.reserve(f.getFingerprints().size());
    for (auto v : f.getFingerprints()) x.fingerprints.push_back(v);
    m.fingerprints.push_back(std::move(x));
  }
  for (auto l : counted(r.getItemLists())) {
    gossip::SyncItemList x;
    x.prefix = l.getPrefix();
    x.prefix_bits = l.getPrefixBits();
    auto items = counted(l.getItems());
    x.items.reserve(items.size());
    for (auto it : items) x.items.push_back({it.getKeyHash(), it.getFingerprint()});
    m.item_lists.push_back(std::move(x));
  }
  for (auto w : r.getWanted()) m.wanted.push_back(w);
  for (auto rec : counted(r.getRecords())) {
    auto x = get(rec);
    if (!x) return x.error();
    m.records.push_back(std::move(*x));
  }
  return m;
}

// --- firing ----------------------------------------------------------------------------

void put(cp::OccurrenceId::Builder b, const schedule::OccurrenceId& o) {
  b.setEntryKey(text(o.entry_key));
  b.setScheduledUtcMs(o.scheduled_utc_ms);
}
schedule::OccurrenceId get(cp::OccurrenceId::Reader r) {
  return {str(r.getEntryKey()), r.getScheduledUtcMs()};
}
void put(cp::ProcessId::Builder b, const schedule::ProcessId& p) {
  b.setNode(text(p.node));
  b.setBoot(p.boot);
}
schedule::ProcessId get(cp::ProcessId::Reader r) { return {str(r.getNode()), r.getBoot()}; }
void put(cp::AttemptInfo::Builder b, const schedule::AttemptInfo& a) {
  b.setAttempt(a.attempt);
  b.setFireId(text(a.fire_id));
  b.setWorker(text(a.worker));
  b.setIssuedUtcMs(a.issued_utc_ms);
  b.setRun(a.run);
}
schedule::AttemptInfo get(cp::AttemptInfo::Reader r) {
  // (A run number of 0 is not one: read as the first run.)
  return {r.getAttempt(), str(r.getFireId()), str(r.getWorker()), r.getIssuedUtcMs(), std::max<uint32_t>(r.getRun(), 1)};
}

// A claim, with or without the fields a ClaimBatch writes once for all its items.
void put(cp::Claim::Builder x, const schedule::Claim& m, bool shared) {
  if (shared) {
    x.setVolume(text(m.volume));
    put(x.initClaimant(), m.claimant);
    x.setConfigEpoch(m.config_epoch);
    x.setSetsHash(m.sets_hash);
  }
  put(x.initOcc(), m.occ);
  x.setWorker(text(m.worker));
  x.setFireUtcMs(m.fire_utc_ms);
  x.setKind(static_cast<cp::ClaimKind>(m.kind));
  x.setRound(m.round);
  put(x.initAttempt(), m.attempt);
  x.setEntryPhysicalMs(m.entry_version.physical_ms);
  x.setEntryLogical(m.entry_version.logical);
  x.setEntryOrigin(text(m.entry_version.origin));
  x.setLease(m.lease);
  x.setForbidOverlap(m.forbid_overlap);
}

// A claim reply, with or without its volume (which a ClaimReplyBatch writes once).
void put(cp::ClaimReply::Builder x, const schedule::ClaimReply& m, bool volume) {
  if (volume) x.setVolume(text(m.volume));
  put(x.initOcc(), m.occ);
  x.setOutcome(static_cast<cp::ClaimOutcome>(m.outcome));
  put(x.initHolder(), m.holder);
  x.setRetryAfterMs(m.retry_after_ms);
  x.setHolderAlive(m.holder_alive);
  x.setKind(static_cast<cp::ClaimKind>(m.kind));
  x.setRound(m.round);
  x.setPromisedRound(m.promised_round);
  x.setHasAccepted(m.has_accepted);
  x.setAcceptedRound(m.accepted_round);
  put(x.initAcceptedBy(), m.accepted_by);
  put(x.initAccepted(), m.accepted);
  x.setLease(m.lease);
  x.setWent(m.went);
}

void put(cp::CoreMessage::Builder b, const CoreMessage& msg) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, UnknownMessage>) {
          b.setUnknown();  // not reached: encode() leaves unknown messages out
        } else if constexpr (std::is_same_v<T, schedule::Claim>) {
          put(b.initClaim(), m, true);
        } else if constexpr (std::is_same_v<T, schedule::ClaimReply>) {
          put(b.initClaimReply(), m, true);
        } else if constexpr (std::is_same_v<T, schedule::Release>) {
          auto x = b.initRelease();
          x.setVolume(text(m.volume));
          put(x.initOcc(), m.occ);
          put(x.initClaimant(), m.claimant);
        } else if constexpr (std::is_same_v<T, schedule::Dispatch>) {
          auto x = b.initDispatch();
          x.setVolume(text(m.volume));
          put(x.initOcc(), m.occ);
          put(x.initOwner(), m.owner);
          x.setFireId(text(m.fire_id));
          x.setAttempt(m.attempt);
          x.setAtMostOnce(m.at_most_once);
          x.setPossibleDuplicate(m.possible_duplicate);
          x.setAcceptByUtcMs(m.accept_by_utc_ms);
          x.setHandler(text(m.handler));
          x.setPayload(data(m.payload));
          x.setSequence(m.sequence);
          x.setIssuedUtcMs(m.issued_utc_ms);
          x.setRunAtUtcMs(m.run_at_utc_ms);
          x.setWorkerBoot(m.worker_boot);
          x.setTimeoutMs(m.timeout_ms);
          x.setRun(m.run);
          x.setRuns(m.runs);
          x.setOnFailure(text(m.on_failure));
          x.setEntryPhysicalMs(m.entry_version.physical_ms);
          x.setEntryLogical(m.entry_version.logical);
          x.setEntryOrigin(text(m.entry_version.origin));
        } else if constexpr (std::is_same_v<T, schedule::DispatchReply>) {
          auto x = b.initDispatchReply();
          x.setVolume(text(m.volume));
          put(x.initOcc(), m.occ);
          x.setFireId(text(m.fire_id));
          x.setOutcome(static_cast<cp::DispatchOutcome>(m.outcome));
          x.setReason(text(m.reason));
          x.setWorkerBoot(m.worker_boot);
        } else if constexpr (std::is_same_v<T, schedule::Revoke>) {
          auto x = b.initRevoke();
          x.setVolume(text(m.volume));
          put(x.initOcc(), m.occ);
          x.setFireId(text(m.fire_id));
          x.setIssuedUtcMs(m.issued_utc_ms);
          x.setRunAtUtcMs(m.run_at_utc_ms);
          x.setWorkerBoot(m.worker_boot);
        } else if constexpr (std::is_same_v<T, schedule::RevokeReply>) {
          auto x = b.initRevokeReply();
          x.setVolume(text(m.volume));
          put(x.initOcc(), m.occ);
          x.setFireId(text(m.fire_id));
          x.setOutcome(static_cast<cp::RevokeOutcome>(m.outcome));
          x.setWorkerBoot(m.worker_boot);
        } else if constexpr (std::is_same_v<T, ConfigRequest>) {
          b.initConfigRequest().setEpoch(m.epoch);
        } else if constexpr (std::is_same_v<T, ConfigDoc>) {
          auto x = b.initConfigDoc();
          x.setEpoch(m.epoch);
          x.setDocument(data(m.document));
        } else if constexpr (std::is_same_v<T, ConfigVote>) {
          auto x = b.initConfigVote();
          x.setKind(static_cast<uint8_t>(m.kind));
          x.setEpoch(m.epoch);
          x.setBallot(m.ballot);
          x.setProposer(text(m.proposer));
          x.setAcceptedBallot(m.accepted_ballot);
          x.setAcceptedProposer(text(m.accepted_proposer));
          x.setDocument(data(m.document));
        } else if constexpr (std::is_same_v<T, schedule::Go>) {
          auto x = b.initGo();
          put(x.initOwner(), m.owner);
          x.setUpToUtcMs(m.up_to_utc_ms);
          auto fenced = x.initFenced(static_cast<unsigned>(m.fenced.size()));
          for (unsigned i = 0; i < m.fenced.size(); ++i) fenced.set(i, text(m.fenced[i]));
        } else if constexpr (std::is_same_v<T, schedule::GoAsk>) {
          auto items = b.initGoAsk().initItems(static_cast<unsigned>(m.items.size()));
          for (unsigned i = 0; i < m.items.size(); ++i) {
            items[i].setVolume(text(m.items[i].volume));
            put(items[i].initOcc(), m.items[i].occ);
            items[i].setFireId(text(m.items[i].fire_id));
            items[i].setRunAtUtcMs(m.items[i].run_at_utc_ms);
          }
        } else if constexpr (std::is_same_v<T, schedule::GoAnswer>) {
          auto items = b.initGoAnswer().initItems(static_cast<unsigned>(m.items.size()));
          for (unsigned i = 0; i < m.items.size(); ++i) {
            items[i].setFireId(text(m.items[i].fire_id));
            items[i].setVerdict(static_cast<cp::GoVerdict>(m.items[i].verdict));
          }
        } else if constexpr (std::is_same_v<T, StorePush>) {
          auto x = b.initStorePush();
          x.setVolume(text(m.volume));
          auto records = x.initRecords(static_cast<unsigned>(m.records.size()));
          for (unsigned i = 0; i < m.records.size(); ++i) put(records[i], m.records[i]);
          x.setWantAck(m.want_ack);
        } else if constexpr (std::is_same_v<T, gossip::SyncMessage>) {
          put(b.initSync(), m);
        } else if constexpr (std::is_same_v<T, StoreAck>) {
          auto x = b.initStoreAck();
          x.setVolume(text(m.volume));
          auto keys = x.initKeys(static_cast<unsigned>(m.records.size()));
          auto versions = x.initVersions(static_cast<unsigned>(m.records.size()));
          for (unsigned i = 0; i < m.records.size(); ++i) {
            keys.set(i, data(m.records[i].first));
            versions[i].setPhysicalMs(m.records[i].second.physical_ms);
            versions[i].setLogical(m.records[i].second.logical);
            versions[i].setOrigin(text(m.records[i].second.origin));
          }
        }
      },
      msg);
}

// Enums arriving from the wire may hold values this version does not know.
template <class E>
Result<E> get_enum(uint16_t raw, uint16_t max, const char* what) {
  if (raw > max) return Error(std::string("unknown ") + what + " " + std::to_string(raw));
  return static_cast<E>(raw);
}

// A claim as written (a batch item's shared fields are filled in by its batch).
Result<schedule::Claim> get(cp::Claim::Reader x) {
  auto kind = get_enum<schedule::ClaimKind>(static_cast<uint16_t>(x.getKind()), 3, "claim kind");
  if (!kind) return kind.error();
  schedule::Claim c;
  c.volume = str(x.getVolume());
  c.occ = get(x.getOcc());
  c.claimant = get(x.getClaimant());
  c.worker = str(x.getWorker());
  c.fire_utc_ms = x.getFireUtcMs();
  c.kind = *kind;
  c.round = x.getRound();
  c.attempt = get(x.getAttempt());
  c.config_epoch = x.getConfigEpoch();
  c.sets_hash = x.getSetsHash();
  c.entry_version = schedule::Version{x.getEntryPhysicalMs(), x.getEntryLogical(), str(x.getEntryOrigin())};
  c.lease = x.getLease();
  c.forbid_overlap = x.getForbidOverlap();
  return c;
}

Result<schedule::ClaimReply> get(cp::ClaimReply::Reader x) {
  auto outcome = get_enum<schedule::ClaimOutcome>(static_cast<uint16_t>(x.getOutcome()), 7, "claim outcome");
  if (!outcome) return outcome.error();
  auto kind = get_enum<schedule::ClaimKind>(static_cast<uint16_t>(x.getKind()), 3, "claim kind");
  if (!kind) return kind.error();
  schedule::ClaimReply reply;
  reply.volume = str(x.getVolume());
  reply.occ = get(x.getOcc());
  reply.outcome = *outcome;
  reply.holder = get(x.getHolder());
  reply.retry_after_ms = x.getRetryAfterMs();
  reply.holder_alive = x.getHolderAlive();
  reply.kind = *kind;
  reply.round = x.getRound();
  reply.promised_round = x.getPromisedRound();
  reply.has_accepted = x.getHasAccepted();
  reply.accepted_round = x.getAcceptedRound();
  reply.accepted_by = get(x.getAcceptedBy());
  reply.accepted = get(x.getAccepted());
  reply.lease = x.getLease();
  reply.went = x.getWent();
  return reply;
}

Result<CoreMessage> get(cp::CoreMessage::Reader r) {
  switch (r.which()) {
    case cp::CoreMessage::CLAIM: {
      auto c = get(r.getClaim());
      if (!c) return c.error();
      return CoreMessage{std::move(*c)};
    }
    case cp::CoreMessage::CLAIM_REPLY: {
      auto reply = get(r.getClaimReply());
      if (!reply) return reply.error();
      return CoreMessage{std::move(*reply)};
    }
    case cp::CoreMessage::RELEASE: {
      auto x = r.getRelease();
      return CoreMessage{schedule::Release{str(x.getVolume()), get(x.getOcc()), get(x.getClaimant())}};
    }
    case cp::CoreMessage::DISPATCH: {
      auto x = r.getDispatch();
      schedule::Dispatch d;
      d.volume = str(x.getVolume());
      d.occ = get(x.getOcc());
      d.owner = get(x.getOwner());
      d.fire_id = str(x.getFireId());
      d.attempt = x.getAttempt();
      d.at_most_once = x.getAtMostOnce();
      d.possible_duplicate = x.getPossibleDuplicate();
      d.accept_by_utc_ms = x.getAcceptByUtcMs();
      d.handler = str(x.getHandler());
      d.payload = str(x.getPayload());
      d.sequence = x.getSequence();
      d.issued_utc_ms = x.getIssuedUtcMs();
      d.run_at_utc_ms = x.getRunAtUtcMs();
      d.timeout_ms = x.getTimeoutMs();
      d.run = std::max<uint32_t>(1, x.getRun());
      d.runs = x.getRuns();
      d.entry_version = schedule::Version{x.getEntryPhysicalMs(), x.getEntryLogical(), str(x.getEntryOrigin())};
      d.worker_boot = x.getWorkerBoot();
      d.on_failure = str(x.getOnFailure());
      return CoreMessage{std::move(d)};
    }
    case cp::CoreMessage::DISPATCH_REPLY: {
      auto x = r.getDispatchReply();
      auto outcome = get_enum<schedule::DispatchOutcome>(static_cast<uint16_t>(x.getOutcome()), 2, "dispatch outcome");
      if (!outcome) return outcome.error();
      return CoreMessage{schedule::DispatchReply{str(x.getVolume()), get(x.getOcc()), str(x.getFireId()),
                                                 *outcome, str(x.getReason()), x.getWorkerBoot()}};
    }
    case cp::CoreMessage::REVOKE: {
      auto x = r.getRevoke();
      return CoreMessage{schedule::Revoke{str(x.getVolume()), get(x.getOcc()), str(x.getFireId()), x.getIssuedUtcMs(),
                                          x.getRunAtUtcMs(), x.getWorkerBoot()}};
    }
    case cp::CoreMessage::REVOKE_REPLY: {
      auto x = r.getRevokeReply();
      auto outcome = get_enum<schedule::RevokeOutcome>(static_cast<uint16_t>(x.getOutcome()), 3, "revoke outcome");
      if (!outcome) return outcome.error();
      return CoreMessage{
          schedule::RevokeReply{str(x.getVolume()), get(x.getOcc()), str(x.getFireId()), *outcome, x.getWorkerBoot()}};
    }
    case cp::CoreMessage::CONFIG_REQUEST:
      return CoreMessage{ConfigRequest{r.getConfigRequest().getEpoch()}};
    case cp::CoreMessage::CONFIG_DOC:
      return CoreMessage{ConfigDoc{r.getConfigDoc().getEpoch(), str(r.getConfigDoc().getDocument())}};
    case cp::CoreMessage::CONFIG_VOTE: {
      auto x = r.getConfigVote();
      auto kind = get_enum<ConfigVote::Kind>(x.getKind(), 4, "config vote kind");
      if (!kind) return kind.error();
      return CoreMessage{ConfigVote{*kind, x.getEpoch(), x.getBallot(), str(x.getProposer()), x.getAcceptedBallot(),
                                    str(x.getAcceptedProposer()), str(x.getDocument())}};
    }
    case cp::CoreMessage::GO: {
      auto x = r.getGo();
      schedule::Go g{get(x.getOwner()), x.getUpToUtcMs(), {}};
      for (auto id : counted(x.getFenced())) g.fenced.push_back(str(id));
      return CoreMessage{std::move(g)};
    }
    case cp::CoreMessage::GO_ASK: {
      schedule::GoAsk ask;
      for (auto item : counted(r.getGoAsk().getItems())) {
        ask.items.push_back({str(item.getVolume()), get(item.getOcc()), str(item.getFireId()), item.getRunAtUtcMs()});
      }
      return CoreMessage{std::move(ask)};
    }
    case cp::CoreMessage::GO_ANSWER: {
      schedule::GoAnswer answer;
      for (auto item : counted(r.getGoAnswer().getItems())) {
        auto verdict = get_enum<schedule::GoVerdict>(static_cast<uint16_t>(item.getVerdict()), 2, "go verdict");
        if (!verdict) return verdict.error();
        answer.items.push_back({str(item.getFireId()), *verdict});
      }
      return CoreMessage{std::move(answer)};
    }
    case cp::CoreMessage::STORE_PUSH: {
      StorePush p;
      p.volume = str(r.getStorePush().getVolume());
      for (auto rec : counted(r.getStorePush().getRecords())) {
        auto x = get(rec);
        if (!x) return x.error();
        p.records.push_back(std::move(*x));
      }
      p.want_ack = r.getStorePush().getWantAck();
      return CoreMessage{std::move(p)};
    }
    case cp::CoreMessage::STORE_ACK: {
      auto x = r.getStoreAck();
      if (x.getKeys().size() != x.getVersions().size()) return Error("store ack: keys and versions differ in count");
      StoreAck a;
      a.volume = str(x.getVolume());
      counted(x.getKeys());
      for (unsigned i = 0; i < x.getKeys().size(); ++i) {
        auto v = x.getVersions()[i];
        a.records.emplace_back(str(x.getKeys()[i]), schedule::Version{v.getPhysicalMs(), v.getLogical(), str(v.getOrigin())});
      }
      return CoreMessage{std::move(a)};
    }
    case cp::CoreMessage::SYNC: {
      auto m = get(r.getSync());
      if (!m) return m.error();
      return CoreMessage{std::move(*m)};
    }
    default:
      return CoreMessage{UnknownMessage{}};
  }
}

// One element of an encoded batch: a message, or (batch_claims) a run of consecutive
// claims of one claimant for one volume under one config, or of consecutive claim replies
// for one volume, written as one ClaimBatch / ClaimReplyBatch.
struct Run {
  size_t begin = 0;
  size_t end = 0;  // exclusive; end - begin >= 2 only for a claim or reply run
};

bool same_batch(const CoreMessage& a, const CoreMessage& b) {
  if (const auto* x = std::get_if<schedule::Claim>(&a)) {
    const auto* y = std::get_if<schedule::Claim>(&b);
    return y != nullptr && x->volume == y->volume && x->claimant == y->claimant &&
           x->config_epoch == y->config_epoch && x->sets_hash == y->sets_hash;
  }
  if (const auto* x = std::get_if<schedule::ClaimReply>(&a)) {
    const auto* y = std::get_if<schedule::ClaimReply>(&b);
    return y != nullptr && x->volume == y->volume;
  }
  return false;
}

std::vector<Run> batch_runs(const std::vector<CoreMessage>& msgs, bool batch_claims) {
  std::vector<Run> runs;
  for (size_t i = 0; i < msgs.size();) {
    if (std::holds_alternative<UnknownMessage>(msgs[i])) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (batch_claims && j < msgs.size() && same_batch(msgs[i], msgs[j])) ++j;
    runs.push_back({i, j});
    i = j;
  }
  return runs;
}

void put_run(cp::CoreMessage::Builder b, const std::vector<CoreMessage>& msgs, const Run& run) {
  const auto n = static_cast<unsigned>(run.end - run.begin);
  if (n == 1) {
    put(b, msgs[run.begin]);
  } else if (const auto* first = std::get_if<schedule::Claim>(&msgs[run.begin])) {
    auto x = b.initClaimBatch();
    x.setVolume(text(first->volume));
    put(x.initClaimant(), first->claimant);
    x.setConfigEpoch(first->config_epoch);
    x.setSetsHash(first->sets_hash);
    auto claims = x.initClaims(n);
    for (unsigned i = 0; i < n; ++i) put(claims[i], std::get<schedule::Claim>(msgs[run.begin + i]), false);
  } else {
    auto x = b.initClaimReplyBatch();
    x.setVolume(text(std::get<schedule::ClaimReply>(msgs[run.begin]).volume));
    auto replies = x.initReplies(n);
    for (unsigned i = 0; i < n; ++i) put(replies[i], std::get<schedule::ClaimReply>(msgs[run.begin + i]), false);
  }
}

// The messages of one element of a received batch, appended to `out` (a ClaimBatch or
// ClaimReplyBatch is read as the claims or replies it carries, each with the batch's shared
// fields).  A message of a kind this version does not know is counted, not appended.
Status get_into(cp::CoreMessage::Reader m, std::vector<CoreMessage>& out, uint32_t& unknown) {
  if (m.which() == cp::CoreMessage::CLAIM_BATCH) {
    auto x = m.getClaimBatch();
    const std::string volume = str(x.getVolume());
    const schedule::ProcessId claimant = get(x.getClaimant());
    for (auto item : counted(x.getClaims())) {
      auto c = get(item);
      if (!c) return c.error();
      c->volume = volume;
      c->claimant = claimant;
      c->config_epoch = x.getConfigEpoch();
      c->sets_hash = x.getSetsHash();
      out.emplace_back(std::move(*c));
    }
    return {};
  }
  if (m.which() == cp::CoreMessage::CLAIM_REPLY_BATCH) {
    auto x = m.getClaimReplyBatch();
    const std::string volume = str(x.getVolume());
    for (auto item : counted(x.getReplies())) {
      auto reply = get(item);
      if (!reply) return reply.error();
      reply->volume = volume;
      out.emplace_back(std::move(*reply));
    }
    return {};
  }
  auto msg = get(m);
  if (!msg) return msg.error();
  if (std::holds_alternative<UnknownMessage>(*msg)) {
    ++unknown;
  } else {
    out.push_back(std::move(*msg));
  }
  return {};
}

}  // namespace

// Words of per-thread scratch space for building and reading messages (32 KiB).
constexpr size_t kScratchWords = 4096;

std::string encode(const Envelope& e, bool batch_claims) {
  // The first segment is a per-thread scratch area, big enough for almost every message
  // (no allocation per message: a heap segment of this size made malloc consolidate its
  // free lists on every call under load); large batches grow as Cap'n Proto sees fit.
  // MallocMessageBuilder zeroes what it used when it is destroyed, as it requires.
  static thread_local std::vector<::capnp::word> scratch(kScratchWords);
  ::capnp::MallocMessageBuilder builder(kj::ArrayPtr<::capnp::word>(scratch.data(), scratch.size()));
  auto root = builder.initRoot<cp::Envelope>();
  root.setVersion(e.version);
  root.setSender(text(e.sender));
  root.setSenderAddr(text(e.sender_addr));
  root.setSentUtcMs(e.sent_utc_ms);
  root.setSeq(e.seq);
  root.setBootId(e.boot_id);
  auto body = root.getBody();
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, UnknownBody>) {
          body.setUnknown();
        } else if constexpr (std::is_same_v<T, gossip::Packet>) {
          put(body.initPacket(), b);
        } else if constexpr (std::is_same_v<T, gossip::PushPull>) {
          put(body.initPushPull(), b);
        } else {
          // A message this version does not know cannot be written again: it is left
          // out (a receiver would only count it and drop it).
          const std::vector<Run> runs = batch_runs(b, batch_claims);
          auto list = body.initBatch(static_cast<unsigned>(runs.size()));
          for (unsigned at = 0; at < runs.size(); ++at) put_run(list[at], b, runs[at]);
        }
      },
      e.body);
  std::string out;
  StringOutputStream stream(out);
  ::capnp::writePackedMessage(stream, builder);
  return out;
}

// The envelope a reader's root describes (the reader is decode()'s: limits applied).
static Result<Envelope> decode_root(cp::Envelope::Reader root) {
  Envelope e;
  e.version = root.getVersion();
  e.sender = str(root.getSender());
  e.sender_addr = str(root.getSenderAddr());
  e.sent_utc_ms = root.getSentUtcMs();
  e.seq = root.getSeq();
  e.boot_id = root.getBootId();
  auto body = root.getBody();
  switch (body.which()) {
    case cp::Envelope::Body::PACKET: {
      auto p = get(body.getPacket());
      if (!p) return p.error();
      e.body = std::move(*p);
      break;
    }
    case cp::Envelope::Body::PUSH_PULL: {
      auto p = get(body.getPushPull());
      if (!p) return p.error();
      e.body = std::move(*p);
      break;
    }
    case cp::Envelope::Body::BATCH: {
      std::vector<CoreMessage> batch;
      auto list = counted(body.getBatch());
      batch.reserve(list.size());
      for (auto m : list) {
        if (Status st = get_into(m, batch, e.unknown_messages); !st.ok()) return st.error();
      }
      e.body = std::move(batch);
      break;
    }
    default:
      e.body = UnknownBody{};
      break;
  }
  return e;
}

Result<Envelope> decode(std::string_view bytes) {
  if (bytes.empty()) return Error("empty message");
  if (bytes.size() > kMaxEncodedBytes) return Error("message too large");
  try {
    kj::ArrayInputStream input(
        kj::ArrayPtr<const kj::byte>(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
    ::capnp::ReaderOptions options;
    // Packed zero runs expand up to 128x, and the segment table may declare any size.
    // Cap the words the reader may allocate and visit (the reader refuses a segment
    // table larger than this) so a small packet cannot cost a large allocation or an
    // enormous traversal.  Legitimate messages stay far below 16 words per input byte.
    options.traversalLimitInWords = std::max<size_t>(8192, 16 * bytes.size());
    options.nestingLimit = 16;
    t_elements_left = bytes.size();
    // The reader's destructor may throw (kj checks the stream when it is done): it runs
    // before `out` is read, so no result is half-returned when it does.
    std::optional<Result<Envelope>> out;
    {
      static thread_local std::vector<::capnp::word> scratch(kScratchWords);
      ::capnp::PackedMessageReader reader(input, options, kj::ArrayPtr<::capnp::word>(scratch.data(), scratch.size()));
      out.emplace(decode_root(reader.getRoot<cp::Envelope>()));
    }
    // Packed encoding of a message must consume the whole input; trailing bytes mean
    // a corrupted or concatenated frame.
    if (out->ok() && input.tryGetReadBuffer().size() != 0) return Error("trailing bytes after message");
    return std::move(*out);
  } catch (const kj::Exception& ex) {
    return Error(std::string("malformed message: ") + ex.getDescription().cStr());
  } catch (const std::exception& ex) {
    return Error(std::string("malformed message: ") + ex.what());
  }
}

}  // namespace caesium::wire
