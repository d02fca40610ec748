#include "node/daemon/exec/handler_invocation.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/time.h"

namespace caesium::daemon {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if it is not one
// (Unicode 15 table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (!is_continuation(at(i + k))) return 0;
  }
  return len;
}

// Replaces invalid UTF-8 with U+FFFD; with `controls`, also C0 controls other than
// '\n' and '\t', and DEL.
std::string clean_text(std::string_view s, bool controls) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (controls && len == 1 && (c < 0x20 || c == 0x7F) && c != '\n' && c != '\t') {
      out += kReplacement;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string header_safe(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  return out;
}

const char* bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = utf8_sequence_length(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string printable_text(std::string_view text) { return clean_text(text, true); }

std::map<std::string, std::string> invocation_env(const node::Invocation& inv,
                                                  std::string_view node_id) {
  return {
      {"CAESIUM_VOLUME", inv.volume},
      {"CAESIUM_ENTITY", inv.entity},
      {"CAESIUM_ENTRY", inv.entry},
      {"CAESIUM_SCHEDULED", format_rfc3339_utc(inv.scheduled_utc_ms)},
      {"CAESIUM_SCHEDULED_MS", std::to_string(inv.scheduled_utc_ms)},
      {"CAESIUM_FIRE_ID", inv.fire_id},
      {"CAESIUM_ATTEMPT", std::to_string(inv.attempt)},
      {"CAESIUM_RUN", std::to_string(inv.run)},
      {"CAESIUM_POSSIBLE_DUPLICATE", bool_text(inv.possible_duplicate)},
      {"CAESIUM_SEQUENCE", std::to_string(inv.sequence)},
      {"CAESIUM_NODE", std::string(node_id)},
  };
}

std::vector<std::string> exec_environment(const char* const* base,
                                          const std::map<std::string, std::string>& extra,
                                          const node::Invocation& inv, std::string_view node_id) {
  std::map<std::string, std::string> vars;
  for (const char* const* p = base; p != nullptr && *p != nullptr; ++p) {
    const std::string_view entry(*p);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    vars[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [name, value] : extra) vars[name] = value;
  for (auto& [name, value] : invocation_env(inv, node_id)) vars[name] = std::move(value);
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::string invocation_json(const node::Invocation& inv, std::string_view node_id) {
  nlohmann::json j;
  j["volume"] = clean_text(inv.volume, false);
  j["entity"] = clean_text(inv.entity, false);
  j["entry"] = clean_text(inv.entry, false);
  j["scheduled"] = format_rfc3339_utc(inv.scheduled_utc_ms);
  j["scheduled_ms"] = inv.scheduled_utc_ms;
  j["fire_id"] = clean_text(inv.fire_id, false);
  j["attempt"] = inv.attempt;
  j["run"] = inv.run;
  j["possible_duplicate"] = inv.possible_duplicate;
  j["sequence"] = inv.sequence;
  j["node"] = clean_text(node_id, false);
  if (is_valid_utf8(inv.payload)) {
    j["payload"] = inv.payload;
  } else {
    j["payload_base64"] = base64_encode(inv.payload);
  }
  return j.dump();
}

std::vector<std::pair<std::string, std::string>> invocation_headers(const node::Invocation& inv) {
  return {
      {"X-Caesium-Volume", header_safe(inv.volume)},
      {"X-Caesium-Entity", header_safe(inv.entity)},
      {"X-Caesium-Entry", header_safe(inv.entry)},
      {"X-Caesium-Scheduled", format_rfc3339_utc(inv.scheduled_utc_ms)},
      {"X-Caesium-Fire-Id", header_safe(inv.fire_id)},
      {"X-Caesium-Attempt", std::to_string(inv.attempt)},
      {"X-Caesium-Run", std::to_string(inv.run)},
      {"X-Caesium-Possible-Duplicate", bool_text(inv.possible_duplicate)},
      {"X-Caesium-Sequence", std::to_string(inv.sequence)},
  };
}

std::string redact_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const size_t host_start = scheme_end + 3;
  const size_t authority_end = url.find_first_of("/?#", host_start);
  const std::string_view authority =
      url.substr(host_start, authority_end == std::string_view::npos ? std::string_view::npos
                                                                     : authority_end - host_start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host_start)) + "***" + std::string(url.substr(host_start + at));
}

void TailBuffer::append(const char* data, size_t n) {
  total_bytes_ += n;
  if (capacity_ == 0) return;
  if (n >= capacity_) {  // only the end of this chunk survives
    ring_.assign(data + (n - capacity_), capacity_);
    head_ = 0;
    return;
  }
  const size_t room = capacity_ - ring_.size();
  if (room > 0) {
    const size_t k = room < n ? room : n;
    ring_.append(data, k);
    data += k;
    n -= k;
  }
  for (size_t i = 0; i < n; ++i) {  // the ring is full: overwrite the oldest bytes
    ring_[head_] = data[i];
    head_ = (head_ + 1) % capacity_;
  }
}

std::string TailBuffer::text() const {
  if (ring_.size() < capacity_) return ring_;
  return ring_.substr(head_) + ring_.substr(0, head_);
}

std::string output_section(std::string_view name, const TailBuffer& tail) {
  if (tail.total_bytes() == 0) return {};
  const std::string kept = tail.text();
  std::string out = "\n" + std::string(name);
  if (tail.truncated()) {
    out += " (last " + std::to_string(kept.size()) + " of " + std::to_string(tail.total_bytes()) +
           " bytes)";
  }
  out += ": " + printable_text(kept);
  return out;
}

}  // namespace caesium::daemon
