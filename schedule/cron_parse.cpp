// Parsing of cron expressions into CronExpr's bit masks (see cron.h for the syntax).
//
// Each field is parsed into a FieldSet (plain bits plus the day-of-month / day-of-week
// specials), then the two day fields are folded into CronExpr::day_masks_ for each of
// the 28 calendar shapes a month can have (cron_days.cpp).
//
// H items (hash spreading) are resolved here, to plain bits, from the entry key's digest;
// the search never sees them.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/time.h"
#include "schedule/cron.h"
#include "schedule/cron_days.h"

namespace caesium::schedule {

using cron_days::FieldSet;
using cron_days::fold_day_fields;
using cron_days::hash_picks;

namespace {

enum class FieldId : uint8_t { second, minute, hour, dom, month, dow };

struct FieldSpec {
  FieldId id;
  const char* name;
  int min;
  int max;       // largest value accepted (7 for day-of-week: Sunday again)
  int open_max;  // upper end of '*' and 'a/n' (6 for day-of-week)
  int hash_max;  // upper end of a rangeless H (as Jenkins: 28 for day-of-month, so
                 // the day exists in every month; 6 for day-of-week, Sunday once)
};

constexpr FieldSpec kSecond{FieldId::second, "second", 0, 59, 59, 59};
constexpr FieldSpec kMinute{FieldId::minute, "minute", 0, 59, 59, 59};
constexpr FieldSpec kHour{FieldId::hour, "hour", 0, 23, 23, 23};
constexpr FieldSpec kDom{FieldId::dom, "day-of-month", 1, 31, 31, 28};
constexpr FieldSpec kMonth{FieldId::month, "month", 1, 12, 12, 12};
constexpr FieldSpec kDow{FieldId::dow, "day-of-week", 0, 7, 6, 6};

// Fixed seed of the key digest, so H's numbers are not the jitter's (both hash the key).
constexpr uint64_t kHashKeySeed = 0x4372'6f6e'4861'7368;  // "CronHash"

// The number that H item `item` of `field` draws from the key digest `seed`: the
// splitmix64 output function over a stream per (field, item), so the H items of one
// expression are independent of each other, and the same H field gives the same value
// in a 5-field and a 6-field expression.  Integer arithmetic only: the same on every
// platform.
uint64_t hash_draw(uint64_t seed, FieldId field, size_t item) {
  const uint64_t stream = uint64_t{static_cast<uint8_t>(field)} * 1024 + item + 1;  // items < 1024
  uint64_t z = seed + 0x9E37'79B9'7F4A'7C15 * stream;
  z = (z ^ (z >> 30)) * 0xBF58'476D'1CE4'E5B9;
  z = (z ^ (z >> 27)) * 0x94D0'49BB'1331'11EB;
  return z ^ (z >> 31);
}

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// Printable rendering of user text for messages: quoted, non-printables as \xNN,
// truncated so a 1 MB garbage line does not become a 1 MB message.
std::string quote(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (std::isprint(c)) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

// Cursor over one field's text, remembering where that text starts in the expression.
class FieldReader {
 public:
  // `hash_seed`: cron_hash_key_digest() of the entry key, or nullptr when there is no
  // key (then an H item is an error).
  FieldReader(const FieldSpec& spec, std::string_view tok, size_t col, const uint64_t* hash_seed)
      : spec_(spec), tok_(tok), col_(col), hash_seed_(hash_seed) {}

  Status parse(FieldSet& out);

 private:
  Error fail(size_t pos, const std::string& what) const {
    return Error(std::string(spec_.name) + " at column " + std::to_string(col_ + pos) + ": " + what,
                 spec_.name);
  }
  char peek() const { return pos_ < tok_.size() ? tok_[pos_] : '\0'; }
  bool at_item_end() const { return pos_ >= tok_.size() || tok_[pos_] == ','; }
  std::string range_text() const {
    return std::to_string(spec_.min) + "-" + std::to_string(spec_.max);
  }
  std::string expected_value() const;
  Status value(int& out);
  Status step(int& out);
  Status item(FieldSet& out);
  Status dom_special(FieldSet& out, bool& handled);
  Status dow_suffix(int weekday, FieldSet& out, bool& handled);
  Status hash_range(int& lo, int& hi);
  Status hash_item(FieldSet& out);
  void add_range(FieldSet& out, int lo, int hi, int stride) const;

  const FieldSpec& spec_;
  std::string_view tok_;
  size_t col_;  // 1-based column of tok_[0] in the whole expression
  const uint64_t* hash_seed_;
  size_t pos_ = 0;
  size_t item_ = 0;  // index of the list item being read
};

std::string FieldReader::expected_value() const {
  if (spec_.id == FieldId::month) return "expected a month 1-12 or JAN-DEC";
  if (spec_.id == FieldId::dow) return "expected a weekday 0-7 or SUN-SAT";
  return "expected a number " + range_text();
}

Status FieldReader::value(int& out) {
  const size_t start = pos_;
  const char c = peek();
  if (std::isdigit(static_cast<unsigned char>(c))) {
    int v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      if (pos_ - start >= 4) return fail(start, "number " + quote(tok_.substr(start, 8)) + " is too long; " + expected_value());
      v = v * 10 + (tok_[pos_++] - '0');
    }
    if (v < spec_.min || v > spec_.max) {
      return fail(start, std::to_string(v) + " is out of range; " + expected_value());
    }
    out = v;
    return Status::success();
  }
  if (std::isalpha(static_cast<unsigned char>(c))) {
    while (std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
    std::string word(tok_.substr(start, pos_ - start));
    for (auto& ch : word) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const bool months = spec_.id == FieldId::month;
    if (months || spec_.id == FieldId::dow) {
      const auto* names = months ? kMonthNames : kDayNames;
      const int count = months ? 12 : 7;
      // "FRIL" is "FRI" followed by the 'L' suffix (last Friday).
      if (!months && word.size() == 4 && word[3] == 'L') {
        word.pop_back();
        --pos_;
      }
      for (int i = 0; i < count; ++i) {
        if (word == names[i]) {
          out = months ? i + 1 : i;
          return Status::success();
        }
      }
      return fail(start, quote(tok_.substr(start, pos_ - start)) + " is not a " +
                             (months ? "month name (expected JAN-DEC or 1-12)"
                                     : "day name (expected SUN-SAT or 0-7)"));
    }
    return fail(start, quote(tok_.substr(start, pos_ - start)) + " is not a number; " + expected_value());
  }
  if (c == '\0' || c == ',') return fail(pos_, "missing value; " + expected_value());
  return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + "; " + expected_value());
}

Status FieldReader::step(int& out) {
  const size_t start = pos_;
  const int span = spec_.open_max - spec_.min + 1;
  int v = 0;
  while (std::isdigit(static_cast<unsigned char>(peek()))) {
    if (pos_ - start >= 4) return fail(start, "step is too long; expected a step 1-" + std::to_string(span));
    v = v * 10 + (tok_[pos_++] - '0');
  }
  if (pos_ == start) {
    return fail(start, (at_item_end() ? std::string("missing step") : "unexpected " + quote(tok_.substr(pos_, 1))) +
                           " after '/'; expected a step 1-" + std::to_string(span));
  }
  if (v < 1 || v > span) {
    return fail(start, "step " + std::to_string(v) + " is out of range; expected a step 1-" + std::to_string(span));
  }
  out = v;
  return Status::success();
}

void FieldReader::add_range(FieldSet& out, int lo, int hi, int stride) const {
  for (int v = lo; v <= hi; v += stride) {
    const int bit = (spec_.id == FieldId::dow && v == 7) ? 0 : v;  // 7 is Sunday again
    out.bits |= uint64_t{1} << bit;
  }
}

// L, L-n, LW, nW in day-of-month.  `handled` is false when the item is an ordinary one.
Status FieldReader::dom_special(FieldSet& out, bool& handled) {
  handled = true;
  const size_t start = pos_;
  if (peek() == 'L' || peek() == 'l') {
    ++pos_;
    if (at_item_end()) {
      out.last_minus |= 1u;
      return Status::success();
    }
    if (peek() == 'W' || peek() == 'w') {
      ++pos_;
      out.last_weekday = true;
    } else if (peek() == '-') {
      ++pos_;
      const size_t num = pos_;
      int n = 0;
      while (std::isdigit(static_cast<unsigned char>(peek())) && pos_ - num < 3) n = n * 10 + (tok_[pos_++] - '0');
      if (pos_ == num || n > 30) {
        return fail(num, "expected a number of days 0-30 after 'L-' (L-3 = three days before the last day)");
      }
      out.last_minus |= 1u << n;
    }
    if (!at_item_end()) {
      return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + " after " +
                            quote(tok_.substr(start, pos_ - start)) + "; expected ',' or the end of the field");
    }
    return Status::success();
  }
  // nW: a number directly followed by W.
  size_t p = pos_;
  while (p < tok_.size() && std::isdigit(static_cast<unsigned char>(tok_[p]))) ++p;
  if (p == pos_ || p >= tok_.size() || (tok_[p] != 'W' && tok_[p] != 'w')) {
    handled = false;
    return Status::success();
  }
  int d = 0;
  if (Status s = value(d); !s.ok()) return s;
  ++pos_;  // the W
  out.nearest |= 1u << d;
  if (!at_item_end()) {
    return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + " after " + quote(tok_.substr(start, pos_ - start)) +
                          "; 'W' takes a single day (e.g. 15W)");
  }
  return Status::success();
}

// "wL" and "w#n" after a day-of-week value.
Status FieldReader::dow_suffix(int weekday, FieldSet& out, bool& handled) {
  handled = true;
  const int w = weekday == 7 ? 0 : weekday;
  if (peek() == 'L' || peek() == 'l') {
    ++pos_;
    out.last_of |= static_cast<uint8_t>(1u << w);
  } else if (peek() == '#') {
    ++pos_;
    const size_t num = pos_;
    const char c = peek();
    if (c < '1' || c > '5' || (pos_ + 1 < tok_.size() && std::isdigit(static_cast<unsigned char>(tok_[pos_ + 1])))) {
      return fail(num, "expected a week number 1-5 after '#' (FRI#2 = second Friday)");
    }
    ++pos_;
    out.nth[static_cast<size_t>(c - '0')] |= static_cast<uint8_t>(1u << w);
  } else {
    handled = false;
    return Status::success();
  }
  if (!at_item_end()) {
    return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + "; expected ',' or the end of the field");
  }
  return Status::success();
}

// The "(a-b)" of H(a-b), if present; lo and hi keep the field's H range otherwise.
Status FieldReader::hash_range(int& lo, int& hi) {
  if (peek() != '(') return Status::success();
  const size_t open = pos_++;
  if (Status s = value(lo); !s.ok()) return s;
  if (peek() != '-') {
    return fail(pos_, (at_item_end() ? std::string("missing '-'") : "unexpected " + quote(tok_.substr(pos_, 1))) +
                          " in H(...); expected a range such as H(0-29)");
  }
  ++pos_;
  if (Status s = value(hi); !s.ok()) return s;
  if (peek() != ')') {
    return fail(pos_, (at_item_end() ? std::string("missing ')'") : "unexpected " + quote(tok_.substr(pos_, 1))) +
                          " after " + quote(tok_.substr(open - 1, pos_ - open + 1)) + "; expected ')'");
  }
  ++pos_;
  if (hi < lo) {
    return fail(open + 1, "range " + quote(tok_.substr(open + 1, pos_ - open - 2)) +
                              " of H goes backwards; expected H(a-b) with a <= b (no wrap-around)");
  }
  return Status::success();
}

// H, H(a-b), H/n, H(a-b)/n: Jenkins's hash spreading (cron.h).
Status FieldReader::hash_item(FieldSet& out) {
  const size_t start = pos_++;
  if (hash_seed_ == nullptr) {
    return fail(start, "'H' picks its value by hashing the entry's key, and this expression was parsed "
                       "without one; expected a number, range or '*'");
  }
  int lo = spec_.min;
  int hi = spec_.hash_max;
  if (Status s = hash_range(lo, hi); !s.ok()) return s;
  int stride = 0;  // none: one value
  if (peek() == '/') {
    ++pos_;
    const size_t at = pos_;
    if (Status s = step(stride); !s.ok()) return s;
    if (stride > hi - lo + 1) {
      return fail(at, "step " + std::to_string(stride) + " is larger than the " + std::to_string(hi - lo + 1) +
                          " values H spreads over here (" + std::to_string(lo) + "-" + std::to_string(hi) +
                          "); expected a step 1-" + std::to_string(hi - lo + 1));
    }
  }
  if (!at_item_end()) {
    const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(peek())));
    const bool day_field = spec_.id == FieldId::dom || spec_.id == FieldId::dow;
    if (day_field && (c == 'L' || c == 'W' || c == '#')) {
      const std::string_view item = tok_.substr(start, tok_.find(',', start) - start);
      return fail(pos_, "'H' cannot be combined with 'L', 'W' or '#' (" + quote(item) +
                            "); give H alone, or a number with the suffix");
    }
    return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + " after " +
                          quote(tok_.substr(start, pos_ - start)) + "; expected '(', '/', ',' or the end of the field");
  }
  const uint64_t draw = hash_draw(*hash_seed_, spec_.id, item_);
  FieldSet chosen;
  if (stride == 0) {
    const int v = lo + static_cast<int>(draw % static_cast<uint64_t>(hi - lo + 1));
    add_range(chosen, v, v, 1);
  } else {
    add_range(chosen, lo + static_cast<int>(draw % static_cast<uint64_t>(stride)), hi, stride);
  }
  out.bits |= chosen.bits;
  out.hashed = true;
  out.hashed_bits |= chosen.bits;
  return Status::success();
}

Status FieldReader::item(FieldSet& out) {
  const size_t start = pos_;
  if (peek() == 'H' || peek() == 'h') return hash_item(out);
  if (peek() == '*') {
    ++pos_;
    int stride = 1;
    if (peek() == '/') {
      ++pos_;
      if (Status s = step(stride); !s.ok()) return s;
    }
    if (!at_item_end()) {
      return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + " after '*'; expected '/', ',' or the end of the field");
    }
    add_range(out, spec_.min, spec_.open_max, stride);
    return Status::success();
  }
  if (peek() == '?') {
    if (spec_.id != FieldId::dom && spec_.id != FieldId::dow) {
      return fail(pos_, "'?' is only allowed in day-of-month and day-of-week; expected a number, range or '*'");
    }
    if (tok_ != "?") return fail(pos_, "'?' must be the whole field");
    ++pos_;
    add_range(out, spec_.min, spec_.open_max, 1);
    return Status::success();
  }
  if (spec_.id == FieldId::dom) {
    bool handled = false;
    if (Status s = dom_special(out, handled); !s.ok() || handled) return s;
  }
  int lo = 0;
  if (Status s = value(lo); !s.ok()) return s;
  if (spec_.id == FieldId::dow) {
    bool handled = false;
    if (Status s = dow_suffix(lo, out, handled); !s.ok() || handled) return s;
  }
  int hi = lo;
  int stride = 1;
  const bool is_range = peek() == '-';
  if (is_range) {
    ++pos_;
    if (Status s = value(hi); !s.ok()) return s;
    if (hi < lo) {
      return fail(start, "range " + quote(tok_.substr(start, pos_ - start)) +
                             " goes backwards; expected start <= end (wrap-around ranges are not supported)");
    }
  }
  if (peek() == '/') {
    ++pos_;
    if (Status s = step(stride); !s.ok()) return s;
    if (!is_range && lo <= spec_.open_max) hi = spec_.open_max;  // "a/n" means a-max/n
  }
  if (!at_item_end()) {
    return fail(pos_, "unexpected " + quote(tok_.substr(pos_, 1)) + "; expected '-', '/', ',' or the end of the field");
  }
  add_range(out, lo, hi, stride);
  return Status::success();
}

Status FieldReader::parse(FieldSet& out) {
  out.star = !tok_.empty() && (tok_[0] == '*' || tok_ == "?");
  for (;;) {
    if (at_item_end()) {
      return fail(pos_, "empty list item; expected a number, range, '*' or name");
    }
    if (Status s = item(out); !s.ok()) return s;
    if (pos_ >= tok_.size()) return Status::success();
    ++pos_;  // ','
    ++item_;
  }
}

std::string month_list(uint16_t months) {
  std::string out;
  for (int m = 1; m <= 12; ++m) {
    if (!(months >> m & 1u)) continue;
    if (!out.empty()) out += ',';
    out += kMonthNames[m - 1];
  }
  return out;
}

struct Token {
  std::string_view text;
  size_t col;  // 1-based
};

using MacroFields = std::array<const char*, 5>;

// The five fields a macro stands for, or nullptr for an unknown macro.
const MacroFields* macro_expansion(std::string_view word) {
  static const MacroFields kYearly{"0", "0", "1", "1", "*"}, kMonthly{"0", "0", "1", "*", "*"},
      kWeekly{"0", "0", "*", "*", "0"}, kDaily{"0", "0", "*", "*", "*"}, kHourly{"0", "*", "*", "*", "*"};
  std::string w(word);
  for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (w == "@yearly" || w == "@annually") return &kYearly;
  if (w == "@monthly") return &kMonthly;
  if (w == "@weekly") return &kWeekly;
  if (w == "@daily" || w == "@midnight") return &kDaily;
  if (w == "@hourly") return &kHourly;
  return nullptr;
}

}  // namespace

// Builds a CronExpr; a friend of CronExpr so it can fill the masks.
class CronParser {
 public:
  // `hash_seed`: the key's digest, or nullptr without a key.
  static Result<CronExpr> parse(std::string_view text, const uint64_t* hash_seed);

 private:
  static Result<CronExpr> fields(std::string_view text, const std::vector<Token>& toks,
                                 std::string original, const uint64_t* hash_seed);
  static Result<CronExpr> macro(std::string_view text, const std::vector<Token>& toks);
};

Result<CronExpr> CronParser::parse(std::string_view text, const uint64_t* hash_seed) {
  if (text.size() > 1024) {
    return Error("expression at column 1025: expression is " + std::to_string(text.size()) +
                     " bytes long; expected at most 1024",
                 "expression");
  }
  std::vector<Token> toks;
  for (size_t i = 0; i < text.size();) {
    if (is_space(text[i])) { ++i; continue; }
    const size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    toks.push_back({text.substr(start, i - start), start + 1});
  }
  if (toks.empty()) {
    return Error("expression at column 1: empty; expected 5 fields (minute hour day-of-month month "
                 "day-of-week), 6 with a leading seconds field, or a macro such as @daily",
                 "expression");
  }
  if (toks[0].text[0] == '@') return macro(text, toks);
  return fields(text, toks, std::string(text), hash_seed);
}

Result<CronExpr> CronParser::macro(std::string_view text, const std::vector<Token>& toks) {
  const Token& head = toks[0];
  std::string lower(head.text);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "@every") {
    if (toks.size() < 2) {
      return Error("@every at column " + std::to_string(head.col + head.text.size()) +
                       ": missing duration; expected e.g. \"@every 90s\" or \"@every 1h30m\"",
                   "@every");
    }
    if (toks.size() > 2) {
      return Error("@every at column " + std::to_string(toks[2].col) + ": unexpected " + quote(toks[2].text) +
                       "; expected one duration such as 1h30m (no spaces)",
                   "@every");
    }
    auto d = parse_duration_ms(toks[1].text);
    const std::string at = "@every at column " + std::to_string(toks[1].col) + ": ";
    if (!d.ok()) return Error(at + d.error().message, "@every");
    if (*d < 1000 || *d % 1000 != 0) {
      return Error(at + quote(toks[1].text) + " is not a whole number of seconds >= 1s", "@every");
    }
    CronExpr e;
    e.text_ = std::string(text);
    e.valid_ = true;
    e.every_s_ = *d / 1000;
    return e;
  }
  const MacroFields* expansion = macro_expansion(head.text);
  if (expansion == nullptr) {
    return Error("expression at column " + std::to_string(head.col) + ": unknown macro " + quote(head.text) +
                     "; expected @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly "
                     "or @every <duration>",
                 "expression");
  }
  if (toks.size() > 1) {
    return Error("expression at column " + std::to_string(toks[1].col) + ": unexpected " + quote(toks[1].text) +
                     " after " + std::string(head.text) + "; a macro stands alone",
                 "expression");
  }
  // The expansion is valid, so no error can point into it; columns are the macro's.
  std::vector<Token> expanded;
  for (const char* f : *expansion) expanded.push_back({f, head.col});
  return fields(text, expanded, std::string(text), nullptr);
}

Result<CronExpr> CronParser::fields(std::string_view text, const std::vector<Token>& toks,
                                    std::string original, const uint64_t* hash_seed) {
  if (toks.size() < 5 || toks.size() > 6) {
    const size_t col = toks.size() > 6 ? toks[6].col : text.size() + 1;
    return Error("expression at column " + std::to_string(col) + ": found " + std::to_string(toks.size()) +
                     " fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (a "
                     "leading seconds field)",
                 "expression");
  }
  const bool with_seconds = toks.size() == 6;
  const size_t base = with_seconds ? 1 : 0;
  const FieldSpec* specs[] = {&kMinute, &kHour, &kDom, &kMonth, &kDow};
  FieldSet sets[6];
  if (with_seconds) {
    if (Status s = FieldReader(kSecond, toks[0].text, toks[0].col, hash_seed).parse(sets[5]); !s.ok()) {
      return s.error();
    }
  } else {
    sets[5].bits = 1;  // second 0
  }
  for (size_t i = 0; i < 5; ++i) {
    const Token& t = toks[base + i];
    if (Status s = FieldReader(*specs[i], t.text, t.col, hash_seed).parse(sets[i]); !s.ok()) return s.error();
  }
  const FieldSet& dom = sets[2];
  const FieldSet& dow = sets[4];
  CronExpr e;
  e.text_ = std::move(original);
  e.has_seconds_ = with_seconds;
  e.seconds_ = sets[5].bits;
  e.minutes_ = sets[0].bits;
  e.hours_ = static_cast<uint32_t>(sets[1].bits);
  e.months_ = static_cast<uint16_t>(sets[3].bits);
  e.wildcard_time_ = sets[0].star || sets[1].star || (with_seconds && sets[5].star);
  e.uses_hash_ = std::any_of(std::begin(sets), std::end(sets), [](const FieldSet& f) { return f.hashed; });
  e.hash_key_digest_ = e.uses_hash_ ? *hash_seed : 0;
  const bool fires = fold_day_fields(dom, dow, e.months_, e.day_masks_);
  if (!fires) {
    const Token& t = toks[base + 2];
    return Error("day-of-month at column " + std::to_string(t.col) + ": the expression never fires: no day in " +
                     month_list(e.months_) + " matches day-of-month " + quote(t.text) + " and day-of-week " +
                     quote(toks[base + 4].text) + hash_picks(dom, dow),
                 "day-of-month");
  }
  e.valid_ = true;
  return e;
}

uint64_t cron_hash_key_digest(std::string_view hash_key) { return hash64(hash_key, kHashKeySeed); }

Result<CronExpr> CronExpr::parse(std::string_view text) { return CronParser::parse(text, nullptr); }

Result<CronExpr> CronExpr::parse(std::string_view text, std::string_view hash_key) {
  const uint64_t seed = cron_hash_key_digest(hash_key);
  return CronParser::parse(text, &seed);
}

}  // namespace caesium::schedule
