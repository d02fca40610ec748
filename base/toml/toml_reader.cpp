#include "base/toml/toml_reader.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/time.h"

namespace caesium {
namespace {

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool before(const toml::source_position& a, const toml::source_position& b) {
  return a.line < b.line || (a.line == b.line && a.column < b.column);
}

}  // namespace

Error TomlErrors::combined() const {
  assert(any());
  std::string message;
  for (const Error& e : errors_) message += (message.empty() ? "" : "\n") + e.message;
  return Error(std::move(message), errors_.front().field);
}

std::string toml_position(const toml::source_region& source, const std::string& path) {
  std::string out = path;
  if (source.begin.line != 0) {
    out += ":" + std::to_string(source.begin.line) + ":" + std::to_string(source.begin.column);
  }
  return out;
}

Result<toml::table> parse_toml(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Error(toml_position(e.source(), path) + ": TOML syntax: " + std::string(e.description()));
  }
}

Result<uint64_t> parse_size_bytes(std::string_view text) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) return Error(in_quotes(text) + " is too large");
    n = n * 10 + d;
    ++i;
  }
  if (i == 0) return Error(in_quotes(text) + " is not a size (expected e.g. \"64MiB\", \"1GiB\" or a byte count)");
  std::string unit(text.substr(i));
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "KiB" || unit == "KB" || unit == "K") {
    shift = 10;
  } else if (unit == "MiB" || unit == "MB" || unit == "M") {
    shift = 20;
  } else if (unit == "GiB" || unit == "GB" || unit == "G") {
    shift = 30;
  } else if (unit == "TiB" || unit == "TB" || unit == "T") {
    shift = 40;
  } else {
    return Error(in_quotes(text) + " has an unknown size unit '" + unit + "' (expected B, KiB, MiB, GiB or TiB)");
  }
  if (shift > 0 && n > (std::numeric_limits<uint64_t>::max() >> shift)) return Error(in_quotes(text) + " is too large");
  return n << shift;
}

Result<int64_t> parse_signed_duration_ms(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  auto d = parse_duration_ms(text);
  if (!d.ok()) return d.error();
  return negative ? -d.value() : d.value();
}

TomlReader::TomlReader(const toml::table& table, std::string section, std::string path, TomlErrors& errors)
    : table_(table), section_(std::move(section)), path_(std::move(path)), errors_(&errors) {}

std::string TomlReader::where(const std::string& key) const {
  auto it = table_.find(key);
  if (it != table_.end()) return toml_position(it->first.source(), path_);
  return toml_position(table_.source(), path_);
}

void TomlReader::fail(const std::string& key, const std::string& message) {
  errors_->add(Error(where(key) + ": " + name(key) + ": " + message, name(key)));
}

void TomlReader::fail_at(const toml::node& node, const std::string& key, const std::string& message) {
  errors_->add(Error(toml_position(node.source(), path_) + ": " + name(key) + ": " + message, name(key)));
}

void TomlReader::stop(const toml::node& node, const std::string& key, const std::string& message) {
  fail_at(node, key, message);
  throw TomlStop{};
}

void TomlReader::stop_here(const std::string& message) {
  const std::string here = toml_position(table_.source(), path_);
  errors_->add(Error(here + ": " + (section_.empty() ? "" : section_ + ": ") + message, section_));
  throw TomlStop{};
}

void TomlReader::wrong_type(const std::string& key, const std::string& expected) { fail(key, "expected " + expected); }

const toml::node* TomlReader::get(const std::string& key) {
  read_.insert(key);
  return table_.get(key);
}

const toml::node* TomlReader::raw(const std::string& key) { return get(key); }

template <class T>
std::optional<T> TomlReader::scalar(const std::string& key, const char* expected) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  if (const auto* v = n->as<T>()) return v->get();
  wrong_type(key, expected);
  return std::nullopt;
}

template <class T>
std::optional<T> TomlReader::within(const std::string& key, T v, T min, T max, const char* unit) {
  if (v >= min && v <= max) return v;
  fail(key, std::to_string(v) + unit + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return std::nullopt;
}

template <class T>
const T* TomlReader::container(const std::string& key, const char* expected) {
  const toml::node* n = get(key);
  if (n == nullptr) return nullptr;
  if (const auto* c = n->as<T>()) return c;
  wrong_type(key, expected);
  return nullptr;
}

std::optional<std::string> TomlReader::string(const std::string& key) { return scalar<std::string>(key, "a string"); }

std::optional<int64_t> TomlReader::integer(const std::string& key, int64_t min, int64_t max) {
  auto v = scalar<int64_t>(key, "an integer");
  return v ? within(key, *v, min, max) : std::nullopt;
}

std::optional<double> TomlReader::number(const std::string& key, double min, double max) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  double v = 0;
  if (const auto* f = n->as_floating_point()) {
    v = f->get();
  } else if (const auto* i = n->as_integer()) {
    v = static_cast<double>(i->get());
  } else {
    wrong_type(key, "a number");
    return std::nullopt;
  }
  if (!std::isfinite(v) || v < min || v > max) {
    fail(key, number_text(v) + " is out of range [" + number_text(min) + ", " + number_text(max) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> TomlReader::boolean(const std::string& key) { return scalar<bool>(key, "true or false"); }

std::optional<int64_t> TomlReader::duration(const std::string& key, int64_t min_ms) {
  return read_duration(key, false, min_ms);
}

std::optional<int64_t> TomlReader::signed_duration(const std::string& key) {
  return read_duration(key, true, std::numeric_limits<int64_t>::min());
}

std::optional<int64_t> TomlReader::read_duration(const std::string& key, bool allow_negative, int64_t min_ms) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  int64_t v = 0;
  if (const auto* i = n->as_integer(); i != nullptr && i->get() == 0) {
    v = 0;
  } else if (const auto* s = n->as_string()) {
    auto d = allow_negative ? parse_signed_duration_ms(s->get()) : parse_duration_ms(s->get());
    if (!d.ok()) {
      fail(key, in_quotes(s->get()) + " is not a duration: " + d.error().message);
      return std::nullopt;
    }
    v = *d;
  } else {
    wrong_type(key, allow_negative ? "a duration string such as \"2s\" or \"-500ms\""
                                   : "a duration string such as \"500ms\", \"10s\" or \"1h30m\"");
    return std::nullopt;
  }
  if (v < min_ms) {
    fail(key, "must be at least " + format_duration_ms(min_ms));
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> TomlReader::size_bytes(const std::string& key, uint64_t min, uint64_t max) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  uint64_t v = 0;
  if (const auto* i = n->as_integer()) {
    if (i->get() < 0) {
      fail(key, "must not be negative");
      return std::nullopt;
    }
    v = static_cast<uint64_t>(i->get());
  } else if (const auto* s = n->as_string()) {
    auto parsed = parse_size_bytes(s->get());
    if (!parsed) {
      fail(key, parsed.error().message);
      return std::nullopt;
    }
    v = *parsed;
  } else {
    wrong_type(key, "a size such as \"64MiB\" or a byte count");
    return std::nullopt;
  }
  return within(key, v, min, max, " bytes");
}

std::optional<std::vector<std::string>> TomlReader::strings(const std::string& key) {
  const toml::array* arr = container<toml::array>(key, "an array of strings");
  if (arr == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto* s = (*arr)[i].as_string();
    if (s == nullptr) {
      fail_at((*arr)[i], key, "item " + std::to_string(i) + " is not a string");
      return std::nullopt;
    }
    out.push_back(s->get());
  }
  return out;
}

std::optional<std::vector<std::string>> TomlReader::one_or_many(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  if (const auto* s = n->as_string()) return std::vector<std::string>{s->get()};
  if (!n->is_array()) {
    wrong_type(key, "a string or an array of strings");
    return std::nullopt;
  }
  return strings(key);
}

std::optional<std::map<std::string, std::string>> TomlReader::string_map(const std::string& key) {
  const toml::table* t = container<toml::table>(key, "a table of strings, e.g. { NAME = \"value\" }");
  if (t == nullptr) return std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : *t) {
    const auto* s = v.as_string();
    if (s == nullptr) {
      fail(key, "value of '" + std::string(k.str()) + "' is not a string");
      return std::nullopt;
    }
    out[std::string(k.str())] = s->get();
  }
  return out;
}

const toml::table* TomlReader::table(const std::string& key) { return container<toml::table>(key, "a table"); }

const toml::array* TomlReader::array(const std::string& key) { return container<toml::array>(key, "an array"); }

std::vector<const toml::table*> TomlReader::tables(const std::string& key) {
  std::vector<const toml::table*> out;
  const toml::node* n = get(key);
  if (n == nullptr) return out;
  const auto* arr = n->as_array();
  if (arr == nullptr || !arr->is_array_of_tables()) {
    wrong_type(key, "an array of tables ([[" + name(key) + "]])");
    return out;
  }
  for (const auto& item : *arr) out.push_back(item.as_table());
  return out;
}

std::optional<TomlReader> TomlReader::section(const std::string& key) {
  const toml::table* t = table(key);
  if (t == nullptr) return std::nullopt;
  return TomlReader(*t, name(key), path_, *errors_);
}

void TomlReader::allow_only(std::initializer_list<const char*> allowed) {
  std::vector<const toml::key*> unknown;
  for (const auto& [k, v] : table_) {
    (void)v;
    const std::string key(k.str());
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) unknown.push_back(&k);
  }
  report_unknown(std::move(unknown));
}

void TomlReader::finish() {
  std::vector<const toml::key*> unread;
  for (const auto& [k, v] : table_) {
    (void)v;
    if (read_.count(std::string(k.str())) == 0) unread.push_back(&k);
  }
  report_unknown(std::move(unread));
}

void TomlReader::report_unknown(std::vector<const toml::key*> keys) {
  // The table is ordered by name; report in file order.
  std::sort(keys.begin(), keys.end(),
            [](const toml::key* a, const toml::key* b) { return before(a->source().begin, b->source().begin); });
  for (const toml::key* k : keys) {
    const std::string key(k->str());
    read_.insert(key);  // reported once
    errors_->add(Error(toml_position(k->source(), path_) + ": " + name(key) + ": unknown key", name(key)));
  }
}

}  // namespace caesium
