#include "sim/toml_reader.h"

#include <cmath>

#include "base/time.h"

namespace caesium::sim {

std::string toml_where(const std::string& path, const toml::node& node) {
  const auto& src = node.source();
  if (src.begin.line == 0) return path;
  return path + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
}

Result<int64_t> parse_signed_duration_ms(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  auto d = parse_duration_ms(text);
  if (!d.ok()) return d.error();
  return negative ? -d.value() : d.value();
}

TomlReader::TomlReader(const toml::table& table, std::string section, const std::string& path)
    : table_(table), section_(std::move(section)), path_(path) {}

void TomlReader::fail(const toml::node& at, const std::string& key, const std::string& what) const {
  throw TomlReadError{Error(toml_where(path_, at) + ": " + name(key) + ": " + what, name(key))};
}

void TomlReader::fail_here(const std::string& what) const {
  throw TomlReadError{Error(toml_where(path_, table_) + ": [" + section_ + "]: " + what, section_)};
}

const toml::node* TomlReader::raw(const std::string& key) {
  known_.insert(key);
  return table_.get(key);
}

std::optional<std::string> TomlReader::string(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  if (!n->is_string()) fail(*n, key, "must be a string");
  return std::string(**n->as_string());
}

std::optional<int64_t> TomlReader::integer(const std::string& key, int64_t min, int64_t max) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  if (!n->is_integer()) fail(*n, key, "must be an integer");
  const int64_t v = **n->as_integer();
  if (v < min || v > max) {
    fail(*n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                      " (got " + std::to_string(v) + ")");
  }
  return v;
}

std::optional<double> TomlReader::number(const std::string& key, double min, double max) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  double v = 0;
  if (n->is_floating_point()) {
    v = **n->as_floating_point();
  } else if (n->is_integer()) {
    v = static_cast<double>(**n->as_integer());
  } else {
    fail(*n, key, "must be a number");
  }
  if (!(v >= min && v <= max) || !std::isfinite(v)) {
    fail(*n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                      " (got " + std::to_string(v) + ")");
  }
  return v;
}

std::optional<bool> TomlReader::boolean(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  if (!n->is_boolean()) fail(*n, key, "must be true or false");
  return **n->as_boolean();
}

std::optional<int64_t> TomlReader::duration(const std::string& key) {
  return read_duration(key, false);
}

std::optional<int64_t> TomlReader::signed_duration(const std::string& key) {
  return read_duration(key, true);
}

std::optional<int64_t> TomlReader::read_duration(const std::string& key, bool allow_negative) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  if (n->is_integer() && **n->as_integer() == 0) return 0;
  if (!n->is_string()) {
    fail(*n, key, allow_negative ? "must be a duration string such as \"2s\" or \"-500ms\""
                                 : "must be a duration string such as \"10s\" or \"1h30m\"");
  }
  auto d = allow_negative ? parse_signed_duration_ms(**n->as_string())
                          : parse_duration_ms(**n->as_string());
  if (!d.ok()) fail(*n, key, d.error().message);
  return d.value();
}

std::optional<std::vector<std::string>> TomlReader::string_list(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  const toml::array* arr = n->as_array();
  if (!arr) fail(*n, key, "must be an array of strings");
  std::vector<std::string> out;
  for (const toml::node& item : *arr) {
    if (!item.is_string()) fail(item, key, "must be an array of strings");
    out.emplace_back(**item.as_string());
  }
  return out;
}

std::optional<std::vector<std::string>> TomlReader::one_or_many(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return std::nullopt;
  if (n->is_string()) return std::vector<std::string>{std::string(**n->as_string())};
  return string_list(key);
}

const toml::table* TomlReader::table(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return nullptr;
  if (!n->is_table()) fail(*n, key, "must be a table");
  return n->as_table();
}

const toml::array* TomlReader::array(const std::string& key) {
  const toml::node* n = raw(key);
  if (!n) return nullptr;
  if (!n->is_array()) fail(*n, key, "must be an array");
  return n->as_array();
}

void TomlReader::finish() const {
  for (const auto& [k, v] : table_) {
    const std::string key(k.str());
    if (known_.count(key) == 0) fail(v, key, "unknown key");
  }
}

}  // namespace caesium::sim

namespace caesium::sim {

void TomlReader::allow_only(std::initializer_list<const char*> allowed) const {
  for (const auto& [k, v] : table_) {
    const std::string key(k.str());
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) fail(v, key, "unknown key");
  }
}

}  // namespace caesium::sim
