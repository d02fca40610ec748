// The compact binary form of an Entry: the value stored under its key in the replicated
// volume store.  Replicas exchange these bytes, so decoding treats them as untrusted.
//
// Layout, version 1 (varint = LEB128; svarint = zigzag LEB128; str = varint length then
// bytes):
//   "CE" 0x01                          magic and version
//   str entity, str name
//   u8 timing: 0 cron  -> str text, str tz
//              1 timer -> u8 kind, svarint at, after, interval, repeat_for; varint count
//   svarint jitter
//   str handler, u8 semantics
//   varint n, n x str bind
//   u8 flags (bit 0 prefer_origin; other bits must be 0), str origin
//   svarint created, accept_timeout, complete_time, misfire_window
//   u8 misfire, str payload
// Version 2 ("CE" 0x02) appends the controls:
//   u8 flags (1 paused, 2 not_before, 4 not_after, 8 resumed, 16 overlap, 32 retry,
//   64 triggers, 128 a second flags byte follows), [u8 flags2 (1 on_failure; written only
//   with a bit set)], svarint timeout, then, each only when its flag is
//   set, in the order of the bits: svarint not_before, not_after, resumed; u8 overlap
//   (1 forbid, 2 replace); retry: varint attempts (1..100), svarint backoff_ms,
//   svarint max_backoff_ms (0..24 h, max >= backoff), varint jitter_permille (0..1000);
//   varint n (1..16), n x (str id, svarint at) triggers; str on_failure (a handler
//   name, not empty).  A flag whose control has its
//   default (overlap allow, the default RetryPolicy) is not set: its absence is the
//   default's only encoding.
// Nothing may follow, and varints must be minimal: each entry has exactly one
// encoding.  A newer version is rejected with a message naming it, so an old node never
// misreads a new entry.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "schedule/entry.h"

namespace caesium::schedule {

// Version 1: the entry without controls; version 2 appends them (Entry::has_controls).  An
// entry without controls is written as version 1, so nodes that read only version 1 keep
// reading every entry that does not use them.
inline constexpr uint8_t kEntryEncodingVersion = 2;

// REQUIRES: validate(entry) succeeded (the encoding itself never fails).
std::string encode_entry(const Entry& entry);

// Decodes, recompiles the cron expression and zone, and validates.  Truncated,
// oversized, trailing or otherwise malformed input is an Error naming what is wrong;
// never a crash.  Cost is linear in the input and allocation is bounded by its size.
Result<Entry> decode_entry(std::string_view bytes);

}  // namespace caesium::schedule
