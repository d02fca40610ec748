// How an invocation is presented to a handler: environment variables (exec), a JSON
// body and X-Caesium-* headers (http), and the bounded, printable text of a result's
// detail.  Pure functions; the executors do the I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "node/core/io.h"

namespace caesium::daemon {

// The CAESIUM_* variables of an invocation, by name:
//   CAESIUM_VOLUME, CAESIUM_ENTITY, CAESIUM_ENTRY, CAESIUM_SCHEDULED (RFC 3339 UTC),
//   CAESIUM_SCHEDULED_MS, CAESIUM_FIRE_ID, CAESIUM_ATTEMPT,
//   CAESIUM_POSSIBLE_DUPLICATE ("true"/"false"), CAESIUM_SEQUENCE, CAESIUM_NODE.
std::map<std::string, std::string> invocation_env(const node::Invocation& inv,
                                                  std::string_view node_id);

// The environment of an exec child, as "NAME=value" strings sorted by name: the
// daemon's environment (`base`, a NULL-terminated environ-style array; may be null),
// overridden by the handler's `extra` variables, overridden by invocation_env (so a
// handler's configuration cannot mask what the invocation says).  Entries of `base`
// without '=' are skipped.
std::vector<std::string> exec_environment(const char* const* base,
                                          const std::map<std::string, std::string>& extra,
                                          const node::Invocation& inv, std::string_view node_id);

// The JSON body POSTed by an http handler: {"volume", "entity", "entry", "scheduled"
// (RFC 3339), "scheduled_ms", "fire_id", "attempt", "possible_duplicate", "sequence",
// "node", and "payload" (a string) when the payload is valid UTF-8, else
// "payload_base64"}.  Strings of the invocation that are not valid UTF-8 are written
// with U+FFFD in place of the bad bytes (JSON text must be UTF-8).
std::string invocation_json(const node::Invocation& inv, std::string_view node_id);

// X-Caesium-Volume, -Entity, -Entry, -Scheduled (RFC 3339), -Fire-Id, -Attempt,
// -Possible-Duplicate, -Sequence, in that order.  Bytes a header value may not hold
// (control characters, DEL) are written as %XX, so a name cannot inject a header.
std::vector<std::pair<std::string, std::string>> invocation_headers(const node::Invocation& inv);

bool is_valid_utf8(std::string_view text);

// `text` made safe to store and show: invalid UTF-8 becomes U+FFFD; control
// characters other than '\n' and '\t' become U+FFFD too.
std::string printable_text(std::string_view text);

// `url` with any user:password@ part replaced by "***@", for result details and logs.
std::string redact_url(std::string_view url);

// Keeps the last `capacity` bytes written to it and counts all of them, so a chatty
// child costs bounded memory.
class TailBuffer {
 public:
  explicit TailBuffer(size_t capacity) : capacity_(capacity) {}
  void append(const char* data, size_t n);
  // The kept bytes, oldest first.
  std::string text() const;
  uint64_t total_bytes() const { return total_bytes_; }
  bool truncated() const { return total_bytes_ > capacity_; }

 private:
  size_t capacity_;
  std::string ring_;  // grows to capacity_, then wraps at head_
  size_t head_ = 0;   // next write position once ring_ is full
  uint64_t total_bytes_ = 0;
};

// "stdout" or "stderr" section of an exec result's detail: "\n<name>: <text>" or,
// when bytes were dropped, "\n<name> (last N of M bytes): <text>"; "" when empty.
std::string output_section(std::string_view name, const TailBuffer& tail);

}  // namespace caesium::daemon
