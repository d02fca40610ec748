#include "node/daemon/config/config_toml.h"

#include <cctype>
#include <limits>

#include "base/time.h"

namespace caesium::daemon {
namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

std::string toml_position(const toml::source_region& src, const std::string& fallback_path) {
  std::string out = src.path ? *src.path : fallback_path;
  if (src.begin.line != 0) {
    out += ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
  }
  return out;
}

Result<uint64_t> parse_size_bytes(std::string_view text) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) return Error(quoted(text) + " is too large");
    n = n * 10 + d;
    ++i;
  }
  if (i == 0) return Error(quoted(text) + " is not a size (expected e.g. \"64MiB\", \"1GiB\" or a byte count)");
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
    return Error(quoted(text) + " has an unknown size unit '" + unit + "' (expected B, KiB, MiB, GiB or TiB)");
  }
  if (shift > 0 && n > (std::numeric_limits<uint64_t>::max() >> shift)) return Error(quoted(text) + " is too large");
  return n << shift;
}

FieldReader::FieldReader(const toml::table& table, std::string section, std::string path, ConfigErrors& errors)
    : table_(table), section_(std::move(section)), path_(std::move(path)), errors_(errors) {}

std::string FieldReader::where(const std::string& key) const {
  auto it = table_.find(key);
  if (it != table_.end()) return toml_position(it->first.source(), path_);
  return toml_position(table_.source(), path_);
}

void FieldReader::fail(const std::string& key, const std::string& message) {
  errors_.add(Error(where(key) + ": " + name(key) + ": " + message, name(key)));
}

void FieldReader::wrong_type(const std::string& key, const std::string& expected) {
  fail(key, "expected " + expected);
}

const toml::node* FieldReader::get(const std::string& key) {
  read_.insert(key);
  return table_.get(key);
}

const toml::node* FieldReader::raw(const std::string& key) { return get(key); }

std::optional<std::string> FieldReader::string(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  if (const auto* s = n->as_string()) return s->get();
  wrong_type(key, "a string");
  return std::nullopt;
}

std::optional<int64_t> FieldReader::integer(const std::string& key, int64_t min, int64_t max) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  const auto* i = n->as_integer();
  if (i == nullptr) {
    wrong_type(key, "an integer");
    return std::nullopt;
  }
  const int64_t v = i->get();
  if (v < min || v > max) {
    fail(key, std::to_string(v) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> FieldReader::boolean(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  if (const auto* b = n->as_boolean()) return b->get();
  wrong_type(key, "true or false");
  return std::nullopt;
}

std::optional<int64_t> FieldReader::duration_ms(const std::string& key, int64_t min_ms) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  int64_t v = 0;
  if (const auto* i = n->as_integer(); i != nullptr && i->get() == 0) {
    v = 0;
  } else if (const auto* s = n->as_string()) {
    auto d = parse_duration_ms(s->get());
    if (!d) {
      fail(key, quoted(s->get()) + " is not a duration: " + d.error().message);
      return std::nullopt;
    }
    v = *d;
  } else {
    wrong_type(key, "a duration string such as \"500ms\", \"10s\" or \"1h30m\"");
    return std::nullopt;
  }
  if (v < min_ms) {
    fail(key, "must be at least " + format_duration_ms(min_ms));
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> FieldReader::size_bytes(const std::string& key, uint64_t min, uint64_t max) {
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
  if (v < min || v > max) {
    fail(key, std::to_string(v) + " bytes is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<std::vector<std::string>> FieldReader::strings(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  const auto* arr = n->as_array();
  if (arr == nullptr) {
    wrong_type(key, "an array of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto* s = (*arr)[i].as_string();
    if (s == nullptr) {
      fail(key, "item " + std::to_string(i) + " is not a string");
      return std::nullopt;
    }
    out.push_back(s->get());
  }
  return out;
}

std::optional<std::map<std::string, std::string>> FieldReader::string_map(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  const auto* t = n->as_table();
  if (t == nullptr) {
    wrong_type(key, "a table of strings, e.g. { NAME = \"value\" }");
    return std::nullopt;
  }
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

const toml::table* FieldReader::table(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return nullptr;
  if (const auto* t = n->as_table()) return t;
  wrong_type(key, "a table");
  return nullptr;
}

std::optional<FieldReader> FieldReader::section(const std::string& key) {
  const toml::table* t = table(key);
  if (t == nullptr) return std::nullopt;
  return FieldReader(*t, name(key), path_, errors_);
}

std::vector<const toml::table*> FieldReader::tables(const std::string& key) {
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

void FieldReader::finish() {
  // The table is ordered by name; report the unknown key that comes first in the file.
  const toml::key* first = nullptr;
  for (const auto& [k, v] : table_) {
    (void)v;
    if (read_.count(std::string(k.str())) != 0) continue;
    const auto& a = k.source().begin;
    if (first == nullptr || a.line < first->source().begin.line ||
        (a.line == first->source().begin.line && a.column < first->source().begin.column)) {
      first = &k;
    }
  }
  if (first == nullptr) return;
  const std::string key(first->str());
  errors_.add(Error(toml_position(first->source(), path_) + ": " + name(key) + ": unknown key", name(key)));
}

}  // namespace caesium::daemon
