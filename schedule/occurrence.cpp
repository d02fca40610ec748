#include "schedule/occurrence.h"

#include <algorithm>

#include "base/bytes.h"
#include "base/hash.h"

namespace caesium::schedule {
namespace {

constexpr uint8_t kRecordFormat = 1;

// Appends v as 16 lower-case hex digits (hot: every occurrence record key).
void append_hex16(std::string& out, uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[16];
  for (int i = 15; i >= 0; --i, v >>= 4) buf[i] = kDigits[v & 0xf];
  out.append(buf, 16);
}

std::optional<uint64_t> parse_hex16(std::string_view s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint64_t>(c - 'a' + 10);
    else return std::nullopt;
  }
  return v;
}

// Scheduled instants are signed; biasing keeps the hex order equal to time order.
uint64_t bias(int64_t t) { return static_cast<uint64_t>(t) ^ (uint64_t{1} << 63); }
int64_t unbias(uint64_t u) { return static_cast<int64_t>(u ^ (uint64_t{1} << 63)); }

void put(ByteWriter& w, const ProcessId& p) {
  w.str(p.node);
  w.varint(p.boot);
}
ProcessId get_process(ByteReader& r) {
  ProcessId p;
  p.node = r.str(1024);
  p.boot = r.varint();
  return p;
}

}  // namespace

namespace {

// occ_prefix(occ) followed by `tail`, built in one string.  Hot: every occurrence record
// key goes through here.
std::string occ_key_with(const OccurrenceId& occ, std::string_view tail) {
  const std::string_view key = occ.entry_key;
  std::string p;
  p.reserve(kOccPrefix.size() + key.size() + 18 + tail.size());
  p += kOccPrefix;
  if (auto n = split_entry_key(key)) {
    p += n->entity;
    p += '/';
    p += n->name;
  } else {
    p += key;  // callers only pass entry keys; keep going rather than crash
  }
  p += '/';
  append_hex16(p, bias(occ.scheduled_utc_ms));
  p += '/';
  p += tail;
  return p;
}

}  // namespace

std::string occ_prefix(const OccurrenceId& occ) { return occ_key_with(occ, {}); }

std::string owner_record_key(const OccurrenceId& occ, std::string_view node) {
  std::string k = occ_key_with(occ, "m/");
  k += node;
  return k;
}

std::string worker_record_key(const OccurrenceId& occ, std::string_view fire_id) {
  std::string k = occ_key_with(occ, "w/");
  k += fire_id;
  return k;
}

std::string replace_record_key(const OccurrenceId& occ, std::string_view node) {
  std::string k = occ_key_with(occ, "r/");
  k += node;
  return k;
}

std::string grant_key(std::string_view volume, const OccurrenceId& occ) {
  const std::string prefix = occ_prefix(occ);
  std::string k;
  k.reserve(kGrantPrefix.size() + volume.size() + prefix.size());
  k += kGrantPrefix;
  k += volume;
  k += '/';
  k += std::string_view(prefix).substr(kOccPrefix.size(), prefix.size() - kOccPrefix.size() - 1);  // no trailing '/'
  return k;
}

std::optional<OccKeyView> split_occ_key(std::string_view key) {
  if (key.substr(0, kOccPrefix.size()) != kOccPrefix) return std::nullopt;
  std::string_view rest = key.substr(kOccPrefix.size());
  // <entity>/<name>/<T>/<m|w|r>/<suffix>
  std::string_view parts[5];
  for (int i = 0; i < 4; ++i) {
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    parts[i] = rest.substr(0, slash);
    rest = rest.substr(slash + 1);
  }
  parts[4] = rest;
  for (const auto& p : parts) {
    if (p.empty()) return std::nullopt;
  }
  auto t = parse_hex16(parts[2]);
  if (!t || parts[4].find('/') != std::string_view::npos) return std::nullopt;
  OccKeyView out;
  out.entity = parts[0];
  out.name = parts[1];
  out.scheduled_utc_ms = unbias(*t);
  if (parts[3] == "m") out.kind = ParsedOccKey::Kind::kOwner;
  else if (parts[3] == "w") out.kind = ParsedOccKey::Kind::kWorker;
  else if (parts[3] == "r") out.kind = ParsedOccKey::Kind::kReplace;
  else return std::nullopt;
  out.suffix = parts[4];
  return out;
}

bool parse_occ_key(std::string_view key, ParsedOccKey& out) {
  const auto v = split_occ_key(key);
  if (!v) return false;
  std::string& k = out.occ.entry_key;
  k.clear();
  k.append(v->entity).append(kScheduleKeyInfix).append(v->name);
  out.occ.scheduled_utc_ms = v->scheduled_utc_ms;
  out.kind = v->kind;
  out.suffix.assign(v->suffix);
  return true;
}

std::optional<ParsedOccKey> parse_occ_key(std::string_view key) {
  ParsedOccKey out;
  if (!parse_occ_key(key, out)) return std::nullopt;
  return out;
}

std::optional<ParsedGrantKey> parse_grant_key(std::string_view key) {
  if (key.substr(0, kGrantPrefix.size()) != kGrantPrefix) return std::nullopt;
  key.remove_prefix(kGrantPrefix.size());
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  // Reuse the occurrence-key parser on "~occ/<entity>/<name>/<T>/m/x".
  std::string occ_key(kOccPrefix);
  occ_key += key.substr(slash + 1);
  occ_key += "/m/x";
  auto parsed = parse_occ_key(occ_key);
  if (!parsed) return std::nullopt;
  return ParsedGrantKey{std::string(key.substr(0, slash)), parsed->occ};
}

bool is_occ_key(std::string_view key) { return key.substr(0, kOccPrefix.size()) == kOccPrefix; }

const char* to_string(FirePath p) {
  switch (p) {
    case FirePath::kQuorum: return "quorum";
    case FirePath::kDegraded: return "degraded";
    case FirePath::kTakeover: return "takeover";
  }
  return "?";
}

const char* to_string(OwnerOutcome o) {
  switch (o) {
    case OwnerOutcome::kOpen: return "open";
    case OwnerOutcome::kMissed: return "missed";
    case OwnerOutcome::kLost: return "lost";
    case OwnerOutcome::kSkipped: return "skipped";
    case OwnerOutcome::kSkippedOverlap: return "skipped_overlap";
  }
  return "?";
}

const char* to_string(WorkerState s) {
  switch (s) {
    case WorkerState::kAccepted: return "accepted";
    case WorkerState::kCompleted: return "completed";
    case WorkerState::kFailed: return "failed";
    case WorkerState::kTimedOut: return "timed_out";
    case WorkerState::kRefused: return "refused";
    case WorkerState::kRevoked: return "revoked";
    case WorkerState::kReplaced: return "replaced";
  }
  return "?";
}

std::string encode(const OwnerRecord& r) {
  ByteWriter w(64 + r.reason.size() + 40 * r.attempts.size());
  w.u8(kRecordFormat);
  w.u8('m');
  put(w, r.owner);
  w.u8(static_cast<uint8_t>(r.path));
  w.u8(static_cast<uint8_t>(r.outcome));
  w.str(r.reason);
  w.svarint(r.decided_utc_ms);
  w.varint(r.attempts.size());
  for (const auto& a : r.attempts) {
    w.varint(a.attempt);
    w.str(a.fire_id);
    w.str(a.worker);
    w.svarint(a.issued_utc_ms);
  }
  // Optional tail: the attempts' run numbers, only when one is > 1 (older records end here).
  const bool runs = std::any_of(r.attempts.begin(), r.attempts.end(), [](const AttemptInfo& a) { return a.run > 1; });
  if (runs) {
    for (const auto& a : r.attempts) w.varint(a.run);
  }
  return w.take();
}

std::string encode(const WorkerRecord& r) {
  ByteWriter w(48 + r.detail.size());
  w.u8(kRecordFormat);
  w.u8('w');
  put(w, r.worker);
  w.varint(r.attempt);
  w.u8(static_cast<uint8_t>(r.state));
  w.svarint(r.accepted_utc_ms);
  w.svarint(r.finished_utc_ms);
  w.boolean(r.possible_duplicate);
  w.str(r.detail);
  // Optional tail, one form only: run_at (absent for an unprepared run of run 1; 0 before
  // a run number), then the run number when > 1.
  if (r.run_at_utc_ms != 0 || r.run > 1) w.svarint(r.run_at_utc_ms);
  if (r.run > 1) w.varint(r.run);
  return w.take();
}

std::string encode(const ReplaceRecord& r) {
  ByteWriter w(32 + r.by.node.size());
  w.u8(kRecordFormat);
  w.u8('r');
  put(w, r.by);
  w.svarint(r.by_scheduled_utc_ms);
  w.svarint(r.requested_utc_ms);
  return w.take();
}

Result<ReplaceRecord> decode_replace_record(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.u8() != kRecordFormat || r.u8() != 'r') return Error("not a replace record (unknown format)");
  ReplaceRecord o;
  o.by = get_process(r);
  o.by_scheduled_utc_ms = r.svarint();
  o.requested_utc_ms = r.svarint();
  if (!r.done()) return Error("replace record: truncated or trailing bytes");
  return o;
}

std::string encode(const Vote& v) {
  ByteWriter w(96);
  w.u8(kRecordFormat);
  w.u8('v');
  w.varint(v.promised_round);
  put(w, v.promised_by);
  w.boolean(v.has_accepted);
  if (v.has_accepted) {
    w.varint(v.accepted_round);
    put(w, v.accepted_by);
    w.varint(v.accepted.attempt);
    w.str(v.accepted.fire_id);
    w.str(v.accepted.worker);
    w.svarint(v.accepted.issued_utc_ms);
    // Optional tail, one form only: the run number (when > 1, or when the flag follows),
    // then the ended flag (only when set).
    if (v.accepted.run > 1 || v.ended) w.varint(v.accepted.run);
    if (v.ended) w.u8(1);
  }
  return w.take();
}

Result<OwnerRecord> decode_owner_record(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.u8() != kRecordFormat || r.u8() != 'm') return Error("not an owner record (unknown format)");
  OwnerRecord o;
  o.owner = get_process(r);
  const uint8_t path = r.u8(), outcome = r.u8();
  if (path > 2 || outcome > 4) return Error("owner record: bad path or outcome");
  o.path = static_cast<FirePath>(path);
  o.outcome = static_cast<OwnerOutcome>(outcome);
  o.reason = r.str(4096);
  o.decided_utc_ms = r.svarint();
  const uint64_t n = r.varint();
  if (n > 10'000) return Error("owner record: too many attempts");
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    AttemptInfo a;
    a.attempt = static_cast<uint32_t>(r.varint());
    a.fire_id = r.str(256);
    a.worker = r.str(1024);
    a.issued_utc_ms = r.svarint();
    o.attempts.push_back(std::move(a));
  }
  if (r.ok() && !r.at_end()) {
    bool above_one = false;
    for (auto& a : o.attempts) {
      const uint64_t run = r.varint();
      if (run < 1 || run > UINT32_MAX) return Error("owner record: bad run number");
      a.run = static_cast<uint32_t>(run);
      above_one = above_one || run > 1;
    }
    if (r.ok() && !above_one) return Error("owner record: run numbers encoded though all are 1");  // one form only
  }
  if (!r.done()) return Error("owner record: truncated or trailing bytes");
  return o;
}

Result<WorkerRecord> decode_worker_record(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.u8() != kRecordFormat || r.u8() != 'w') return Error("not a worker record (unknown format)");
  WorkerRecord o;
  o.worker = get_process(r);
  o.attempt = static_cast<uint32_t>(r.varint());
  const uint8_t state = r.u8();
  if (state > 6) return Error("worker record: bad state");
  o.state = static_cast<WorkerState>(state);
  o.accepted_utc_ms = r.svarint();
  o.finished_utc_ms = r.svarint();
  o.possible_duplicate = r.boolean();
  o.detail = r.str(4096);
  if (r.ok() && !r.at_end()) {
    o.run_at_utc_ms = r.svarint();
    if (r.ok() && !r.at_end()) {
      const uint64_t run = r.varint();
      if (run < 2 || run > UINT32_MAX) return Error("worker record: bad run number");
      o.run = static_cast<uint32_t>(run);
    } else if (o.run_at_utc_ms == 0) {
      return Error("worker record: run_at encoded as 0");  // one form only
    }
  }
  if (!r.done()) return Error("worker record: truncated or trailing bytes");
  return o;
}

Result<Vote> decode_vote(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.u8() != kRecordFormat || r.u8() != 'v') return Error("not a vote record");
  Vote v;
  v.promised_round = r.varint();
  v.promised_by = get_process(r);
  v.has_accepted = r.boolean();
  if (v.has_accepted) {
    v.accepted_round = r.varint();
    v.accepted_by = get_process(r);
    v.accepted.attempt = static_cast<uint32_t>(r.varint());
    v.accepted.fire_id = r.str(256);
    v.accepted.worker = r.str(1024);
    v.accepted.issued_utc_ms = r.svarint();
    if (r.ok() && !r.at_end()) {
      const uint64_t run = r.varint();
      if (run < 1 || run > UINT32_MAX) return Error("vote record: bad run number");
      v.accepted.run = static_cast<uint32_t>(run);
      if (r.ok() && !r.at_end()) {
        if (r.u8() != 1) return Error("vote record: bad ended flag");
        v.ended = true;
      } else if (run == 1) {
        return Error("vote record: run 1 encoded without the ended flag");  // one form only
      }
    }
  }
  if (!r.done()) return Error("vote record: truncated or trailing bytes");
  return v;
}

std::string make_fire_id(std::string_view volume, const OccurrenceId& occ, const ProcessId& owner,
                         uint32_t attempt) {
  uint64_t h = hash64(volume, 0xf17e);
  h = hash_combine(h, hash64(occ.entry_key));
  h = hash_combine(h, static_cast<uint64_t>(occ.scheduled_utc_ms));
  h = hash_combine(h, hash64(owner.node));
  h = hash_combine(h, owner.boot);
  h = hash_combine(h, attempt);
  std::string id;
  append_hex16(id, h);
  return id;
}

}  // namespace caesium::schedule
