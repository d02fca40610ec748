#include "schedule/entry_codec.h"

#include <cassert>

#include "base/bytes.h"

namespace caesium::schedule {
namespace {

// ByteReader's failures stick but do not say where; this wrapper remembers the first
// field whose read failed (or that held a bad value) so the error can name it.
class Reader {
 public:
  explicit Reader(std::string_view in) : r_(in) {}

  uint8_t u8(const char* field) { return note(field, r_.u8()); }
  uint64_t varint(const char* field) { return note(field, r_.varint()); }
  int64_t svarint(const char* field) { return note(field, r_.svarint()); }
  std::string str(const char* field, size_t max_len) { return note(field, r_.str(max_len)); }

  void fail(const char* field, const std::string& why) {
    if (error_.empty()) error_ = std::string(field) + ": " + why;
  }
  bool ok() const { return error_.empty(); }
  // Varints have redundant forms; only the shortest is the one encode_entry writes.
  bool canonical() const { return r_.shortest_varints(); }
  bool at_end() const { return r_.at_end(); }
  const std::string& error() const { return error_; }

 private:
  template <class T>
  T note(const char* field, T v) {
    if (!r_.ok()) fail(field, "truncated or malformed");
    return v;
  }
  ByteReader r_;
  std::string error_;
};

// Generous bounds for strings whose real limits validate() checks later; they only
// stop a hostile length from allocating much before that.
constexpr size_t kMaxExprBytes = 1024;
constexpr size_t kMaxZoneBytes = 64;
// Version 2's controls byte: paused 1, not_before 2, not_after 4, resumed 8, overlap 16
// (a u8 policy follows, never allow), retry 32 (the policy follows, never the default),
// triggers 64.
constexpr uint8_t kOverlapFlag = 16;
constexpr uint8_t kFlagRetry = 32;
constexpr uint8_t kFlagTriggers = 64;
// Bit 128: a second flags byte follows the first (the first has no bit left).
constexpr uint8_t kFlagMore = 128;
constexpr uint8_t kKnownControlFlags = 1 | 2 | 4 | 8 | kOverlapFlag | kFlagRetry | kFlagTriggers | kFlagMore;
// The second flags byte.
constexpr uint8_t kFlag2OnFailure = 1;
constexpr uint8_t kKnownControlFlags2 = kFlag2OnFailure;

}  // namespace

std::string encode_entry(const Entry& e) {
  ByteWriter w;
  w.u8('C');
  w.u8('E');
  w.u8(e.has_controls() ? 2 : 1);
  w.str(e.entity);
  w.str(e.name);
  if (const auto* cron = std::get_if<CronTiming>(&e.timing)) {
    w.u8(0);
    w.str(cron->text);
    w.str(cron->tz);
  } else {
    const auto& t = std::get<Timer>(e.timing);
    w.u8(1);
    w.u8(static_cast<uint8_t>(t.kind));
    w.svarint(t.at_utc_ms);
    w.svarint(t.after_ms);
    w.svarint(t.interval_ms);
    w.svarint(t.repeat_for_ms);
    w.varint(t.count);
  }
  w.svarint(e.jitter_ms);
  w.str(e.handler);
  w.u8(static_cast<uint8_t>(e.semantics));
  w.varint(e.bind.size());
  for (const auto& b : e.bind) w.str(b);
  w.u8(e.prefer_origin ? 1 : 0);
  w.str(e.origin);
  w.svarint(e.created_utc_ms);
  w.svarint(e.accept_timeout_ms);
  w.svarint(e.complete_time_ms);
  w.svarint(e.misfire_window_ms);
  w.u8(static_cast<uint8_t>(e.misfire));
  w.str(e.payload);
  if (e.has_controls()) {
    w.u8(static_cast<uint8_t>((e.paused ? 1 : 0) | (e.not_before_utc_ms ? 2 : 0) | (e.not_after_utc_ms ? 4 : 0) |
                              (e.resumed_utc_ms ? 8 : 0) | (e.overlap != OverlapPolicy::allow ? kOverlapFlag : 0) |
                              (e.retry != RetryPolicy{} ? kFlagRetry : 0) | (e.triggers.empty() ? 0 : kFlagTriggers) |
                              (e.on_failure.empty() ? 0 : kFlagMore)));
    if (!e.on_failure.empty()) w.u8(kFlag2OnFailure);
    w.svarint(e.timeout_ms);
    if (e.not_before_utc_ms) w.svarint(*e.not_before_utc_ms);
    if (e.not_after_utc_ms) w.svarint(*e.not_after_utc_ms);
    if (e.resumed_utc_ms) w.svarint(*e.resumed_utc_ms);
    if (e.overlap != OverlapPolicy::allow) w.u8(static_cast<uint8_t>(e.overlap));
    if (e.retry != RetryPolicy{}) {
      w.varint(e.retry.attempts);
      w.svarint(e.retry.backoff_ms);
      w.svarint(e.retry.max_backoff_ms);
      w.varint(e.retry.jitter_permille);
    }
    if (!e.triggers.empty()) {
      w.varint(e.triggers.size());
      for (const Trigger& t : e.triggers) {
        w.str(t.id);
        w.svarint(t.at_utc_ms);
      }
    }
    if (!e.on_failure.empty()) w.str(e.on_failure);
  }
  return w.take();
}

namespace {

// The timing tag and its fields; a cron timing's text and zone are compiled by the caller
// once the whole entry has been read.  Returns the tag.
uint8_t read_timing(Reader& r, Entry& e, std::string& cron_text, std::string& tz) {
  const uint8_t timing = r.u8("timing");
  if (timing == 0) {
    cron_text = r.str("cron", kMaxExprBytes);
    tz = r.str("tz", kMaxZoneBytes);
  } else if (timing == 1) {
    Timer t;
    const uint8_t kind = r.u8("timer.kind");
    if (kind > static_cast<uint8_t>(TimerKind::interval)) r.fail("timer.kind", "unknown kind " + std::to_string(kind));
    t.kind = static_cast<TimerKind>(kind);
    t.at_utc_ms = r.svarint("timer.at");
    t.after_ms = r.svarint("timer.after");
    t.interval_ms = r.svarint("timer.interval");
    t.repeat_for_ms = r.svarint("timer.repeat_for");
    t.count = r.varint("timer.count");
    e.timing = t;
  } else if (r.ok()) {
    r.fail("timing", "unknown timing tag " + std::to_string(timing));
  }
  return timing;
}

// The retry policy (flag 32): attempts and jitter are checked here, before they are
// narrowed to 32 bits; the durations by validate() once the entry is read.
void read_retry(Reader& r, RetryPolicy& retry) {
  const uint64_t attempts = r.varint("retry.attempts");
  if (attempts < 1 || attempts > kMaxRetryAttempts) {
    r.fail("retry.attempts", "must be between 1 and " + std::to_string(kMaxRetryAttempts) + ", got " +
                                 std::to_string(attempts));
  }
  retry.attempts = static_cast<uint32_t>(attempts);
  retry.backoff_ms = r.svarint("retry.backoff");
  retry.max_backoff_ms = r.svarint("retry.max_backoff");
  const uint64_t jitter = r.varint("retry.jitter");
  if (jitter > 1000) r.fail("retry.jitter", "must be at most 1000 permille, got " + std::to_string(jitter));
  retry.jitter_permille = static_cast<uint32_t>(jitter);
  // The default policy is written as the flag's absence, so one entry keeps one encoding.
  if (r.ok() && retry == RetryPolicy{}) r.fail("retry", "the default policy is written without the retry flag");
}

// Version 2's controls; an entry with none set must have been written as version 1.
void read_controls(Reader& r, Entry& e) {
  const uint8_t flags = r.u8("controls");
  if ((flags & ~kKnownControlFlags) != 0) r.fail("controls", "unknown flag bits");
  const uint8_t flags2 = (flags & kFlagMore) != 0 ? r.u8("controls") : 0;
  if ((flags2 & ~kKnownControlFlags2) != 0) r.fail("controls", "unknown flag bits");
  // The second byte is written only when it has a flag set: one entry, one encoding.
  if ((flags & kFlagMore) != 0 && flags2 == 0) r.fail("controls", "a second flags byte without any flag");
  e.paused = (flags & 1) != 0;
  e.timeout_ms = r.svarint("timeout");
  if ((flags & 2) != 0) e.not_before_utc_ms = r.svarint("not_before");
  if ((flags & 4) != 0) e.not_after_utc_ms = r.svarint("not_after");
  if ((flags & 8) != 0) e.resumed_utc_ms = r.svarint("resumed");
  if ((flags & kOverlapFlag) != 0) {
    const uint8_t overlap = r.u8("overlap");
    // allow is written as the flag's absence, so one entry keeps one encoding.
    if (overlap < 1 || overlap > 2) r.fail("overlap", "unknown policy " + std::to_string(overlap));
    e.overlap = static_cast<OverlapPolicy>(overlap);
  }
  if ((flags & kFlagRetry) != 0) read_retry(r, e.retry);
  if ((flags & kFlagTriggers) != 0) {
    const uint64_t n = r.varint("triggers");
    if (n == 0 || n > kMaxTriggers) r.fail("triggers", "bad count " + std::to_string(n));
    for (uint64_t i = 0; i < n && r.ok(); ++i) {
      Trigger t;
      t.id = r.str("triggers.id", kMaxTriggerIdBytes);
      t.at_utc_ms = r.svarint("triggers.at");
      e.triggers.push_back(std::move(t));
    }
  }
  if ((flags2 & kFlag2OnFailure) != 0) {
    e.on_failure = r.str("on_failure", kMaxIdentifierBytes);
    if (r.ok() && e.on_failure.empty()) r.fail("on_failure", "empty (no handler is written as the flag's absence)");
  }
  if (r.ok() && !e.has_controls()) r.fail("controls", "version 2 without any control (version 1 is its form)");
}

}  // namespace

Result<Entry> decode_entry(std::string_view bytes) {
  Reader r(bytes);
  if (bytes.size() < 3 || bytes[0] != 'C' || bytes[1] != 'E') {
    return Error("entry encoding: not an entry (bad magic)", "encoding");
  }
  r.u8("magic");
  r.u8("magic");
  const uint8_t version = r.u8("version");
  if (version < 1 || version > kEntryEncodingVersion) {
    return Error("entry encoding: unsupported version " + std::to_string(version) + " (this node reads version " +
                     std::to_string(kEntryEncodingVersion) + " and older)",
                 "encoding");
  }
  Entry e;
  e.entity = r.str("entity", kMaxIdentifierBytes);
  e.name = r.str("name", kMaxIdentifierBytes);
  std::string cron_text, tz;
  const uint8_t timing = read_timing(r, e, cron_text, tz);
  e.jitter_ms = r.svarint("jitter");
  e.handler = r.str("handler", kMaxIdentifierBytes);
  const uint8_t semantics = r.u8("semantics");
  if (semantics > 1) r.fail("semantics", "unknown value " + std::to_string(semantics));
  e.semantics = static_cast<Semantics>(semantics);
  const uint64_t n_bind = r.varint("bind");
  if (n_bind > kMaxBindSelectors) r.fail("bind", "too many selectors (" + std::to_string(n_bind) + ")");
  for (uint64_t i = 0; i < n_bind && r.ok(); ++i) e.bind.push_back(r.str("bind", kMaxIdentifierBytes + kTagPrefix.size()));
  const uint8_t flags = r.u8("flags");
  if (flags > 1) r.fail("flags", "unknown flag bits");
  e.prefer_origin = (flags & 1) != 0;
  e.origin = r.str("origin", kMaxIdentifierBytes);
  e.created_utc_ms = r.svarint("created");
  e.accept_timeout_ms = r.svarint("accept_timeout");
  e.complete_time_ms = r.svarint("complete_time");
  e.misfire_window_ms = r.svarint("misfire_window");
  const uint8_t misfire = r.u8("misfire");
  if (misfire > 2) r.fail("misfire", "unknown policy " + std::to_string(misfire));
  e.misfire = static_cast<MisfirePolicy>(misfire);
  e.payload = r.str("payload", kMaxPayloadBytes);
  if (version >= 2) read_controls(r, e);
  if (r.ok() && !r.at_end()) r.fail("entry", "unexpected bytes after the payload");
  if (!r.ok()) return Error("entry encoding: " + r.error(), "encoding");
  if (timing == 0) {
    auto compiled = CronTiming::make(cron_text, tz, entry_key(e));  // H hashes the key
    if (!compiled.ok()) return Error("entry encoding: " + compiled.error().message, compiled.error().field);
    e.timing = std::move(*compiled);
  }
  if (Status s = validate(e); !s.ok()) {
    return Error("entry encoding: invalid entry: " + s.error().message, s.error().field);
  }
  // Accept only the encoding encode_entry writes, so one entry has exactly one encoding
  // and equal entries give equal store values on every replica.  Every other field has
  // one form already: bytes whose values are checked above, strings kept verbatim
  // (CronTiming::make keeps the text, validate() requires the zone's own name), and the
  // end of input.  So shortest varints are all it takes, and entries are decoded at
  // every due occurrence without encoding them again (the re-encoding cost ~6% of the
  // firing path).  Debug builds still check the round trip.
  if (!r.canonical()) return Error("entry encoding: not in canonical form", "encoding");
  assert(encode_entry(e) == bytes);
  return e;
}

}  // namespace caesium::schedule
