#include "base/time.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include <date/date.h>

namespace caesium {
namespace {

bool unit_ms(std::string_view unit, int64_t& out) {
  if (unit == "ms") { out = 1; return true; }
  if (unit == "s") { out = kMsPerSecond; return true; }
  if (unit == "m") { out = kMsPerMinute; return true; }
  if (unit == "h") { out = kMsPerHour; return true; }
  if (unit == "d") { out = kMsPerDay; return true; }
  if (unit == "w") { out = 7 * kMsPerDay; return true; }
  return false;
}

// Reads exactly `n` digits at text[pos..].  Returns -1 when they are not all digits.
int digits(std::string_view text, size_t pos, size_t n) {
  if (pos + n > text.size()) return -1;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

Result<int64_t> parse_duration_ms(std::string_view text) {
  const std::string shown(text);
  if (text.empty()) return Error("empty duration; expected e.g. \"30s\", \"5m\", \"1h30m\"");
  if (text == "0") return int64_t{0};
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t num_start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == num_start) {
      return Error("bad duration \"" + shown + "\": expected a number at position " +
                   std::to_string(num_start + 1));
    }
    const std::string number(text.substr(num_start, i - num_start));
    if (number.find('.') != number.rfind('.') || number == ".") {
      return Error("bad duration \"" + shown + "\": malformed number \"" + number + "\"");
    }
    const size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    int64_t scale = 0;
    if (unit.empty()) {
      return Error("bad duration \"" + shown + "\": number \"" + number +
                   "\" needs a unit (ms, s, m, h, d, w)");
    }
    if (!unit_ms(unit, scale)) {
      return Error("bad duration \"" + shown + "\": unknown unit \"" + std::string(unit) +
                   "\" (expected ms, s, m, h, d or w)");
    }
    total += std::strtod(number.c_str(), nullptr) * static_cast<double>(scale);
    if (total > 9.0e15) return Error("bad duration \"" + shown + "\": too large");
  }
  return static_cast<int64_t>(std::llround(total));
}

std::string format_duration_ms(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) { out = "-"; ms = -ms; }
  struct Unit { int64_t size; const char* name; };
  static constexpr Unit units[] = {{kMsPerDay, "d"}, {kMsPerHour, "h"}, {kMsPerMinute, "m"},
                                   {kMsPerSecond, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (ms >= u.size) {
      out += std::to_string(ms / u.size) + u.name;
      ms %= u.size;
    }
  }
  return out;
}

Result<int64_t> parse_rfc3339_ms(std::string_view text) {
  const std::string shown(text);
  auto bad = [&](const std::string& why) {
    return Error("bad time \"" + shown + "\": " + why +
                 " (expected RFC 3339, e.g. 2026-03-29T03:00:00Z or 2026-03-29T03:00:00+01:00)");
  };
  const int y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
  if (y < 0 || mo < 0 || d < 0 || text.size() < 10 || text[4] != '-' || text[7] != '-') {
    return bad("malformed date");
  }
  int h = 0, mi = 0, s = 0;
  size_t pos = 10;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ') return bad("expected 'T' after the date");
    h = digits(text, 11, 2);
    mi = digits(text, 14, 2);
    s = digits(text, 17, 2);
    if (h < 0 || mi < 0 || s < 0 || text.size() < 19 || text[13] != ':' || text[16] != ':') {
      return bad("malformed time of day");
    }
    pos = 19;
  } else {
    return bad("missing time of day");
  }
  int64_t frac_ms = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100;
    const size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      frac_ms += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad("empty fraction");
  }
  int64_t offset_s = 0;
  if (pos >= text.size()) return bad("missing zone ('Z' or +hh:mm)");
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    const int oh = digits(text, pos + 1, 2), om = digits(text, pos + 4, 2);
    if (oh < 0 || om < 0 || pos + 6 > text.size() || text[pos + 3] != ':' || oh > 23 || om > 59) {
      return bad("malformed UTC offset");
    }
    offset_s = (oh * 3600 + om * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad("expected 'Z' or a UTC offset");
  }
  if (pos != text.size()) return bad("trailing characters");
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 60) return bad("field out of range");
  const date::year_month_day ymd{date::year{y}, date::month{static_cast<unsigned>(mo)},
                                 date::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return bad("no such day");
  const int64_t days = date::sys_days{ymd}.time_since_epoch().count();
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + (s == 60 ? 59 : s) - offset_s;
  return secs * 1000 + frac_ms;
}

std::string format_rfc3339_offset(int64_t utc_ms, int32_t offset_seconds) {
  const int64_t local_ms = utc_ms + int64_t{offset_seconds} * 1000;
  int64_t days = local_ms / kMsPerDay;
  int64_t rem = local_ms % kMsPerDay;
  if (rem < 0) { rem += kMsPerDay; --days; }
  const date::year_month_day ymd{date::sys_days{date::days{days}}};
  const int64_t h = rem / kMsPerHour, mi = rem / kMsPerMinute % 60, s = rem / 1000 % 60, ms = rem % 1000;
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld",
                        static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                        static_cast<unsigned>(ymd.day()), static_cast<long long>(h),
                        static_cast<long long>(mi), static_cast<long long>(s));
  std::string out(buf, static_cast<size_t>(n));
  if (ms != 0) {
    n = std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(ms));
    out.append(buf, static_cast<size_t>(n));
  }
  if (offset_seconds == 0) {
    out += 'Z';
  } else {
    const int32_t a = offset_seconds < 0 ? -offset_seconds : offset_seconds;
    n = std::snprintf(buf, sizeof buf, "%c%02d:%02d", offset_seconds < 0 ? '-' : '+', a / 3600, a / 60 % 60);
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string format_rfc3339_utc(int64_t utc_ms) { return format_rfc3339_offset(utc_ms, 0); }

}  // namespace caesium
