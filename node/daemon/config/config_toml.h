// Strict, position-aware reading of the daemon's TOML config (used by config.cpp).
//
// A FieldReader wraps one TOML table.  Every getter marks its key as known and returns
// std::nullopt when the key is absent; a present value of the wrong type or out of range
// records an error (the first one wins) naming "<file>:<line>:<col>: <dotted.key>: why",
// where the position is the key's.  `finish()` reports any key never asked for as an
// unknown key, so a typo is an error instead of a silently ignored setting.  Callers
// read everything, then check `errors.failed()` once: the code reads straight through,
// with no exceptions and no early returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "base/result.h"

namespace caesium::daemon {

// The first error of a load; later ones are dropped (they are often consequences).
class ConfigErrors {
 public:
  void add(Error e) {
    if (!first_) first_ = std::move(e);
  }
  bool failed() const { return first_.has_value(); }
  const Error& first() const { return *first_; }

 private:
  std::optional<Error> first_;
};

// "<file>:<line>:<col>" of a node or key; `fallback_path` when it carries no path.
std::string toml_position(const toml::source_region& src, const std::string& fallback_path);

// Sizes: an integer (bytes) or a string with a binary unit: "512B", "64KiB", "16MiB",
// "1GiB", "1TiB" (KB/MB/GB are accepted as the same binary units).
Result<uint64_t> parse_size_bytes(std::string_view text);

class FieldReader {
 public:
  // `section` is the dotted prefix used in messages ("gossip", "handler[2]", "" at top).
  FieldReader(const toml::table& table, std::string section, std::string path, ConfigErrors& errors);

  bool has(const std::string& key) const { return table_.contains(key); }
  std::optional<std::string> string(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  std::optional<bool> boolean(const std::string& key);
  // A duration string ("250ms", "1h30m") or the integer 0.
  std::optional<int64_t> duration_ms(const std::string& key, int64_t min_ms = 0);
  std::optional<uint64_t> size_bytes(const std::string& key, uint64_t min, uint64_t max);
  std::optional<std::vector<std::string>> strings(const std::string& key);
  // An inline table (or table) of string values: { FOO = "bar" }.
  std::optional<std::map<std::string, std::string>> string_map(const std::string& key);
  // A sub-table (marks the key); nullptr when absent or not a table (an error).
  const toml::table* table(const std::string& key);
  // An array of tables ([[key]]); empty when absent; an error when not one.
  std::vector<const toml::table*> tables(const std::string& key);
  // Marks a key as known without reading it (the caller reads it by other means).
  const toml::node* raw(const std::string& key);

  // Records an error at `key` (its position when present, else the table's).
  void fail(const std::string& key, const std::string& message);
  // Reports every key never read.  Call last.
  void finish();

  std::string name(const std::string& key) const { return section_.empty() ? key : section_ + "." + key; }
  std::string where(const std::string& key) const;
  const std::string& path() const { return path_; }
  const toml::table& node() const { return table_; }
  ConfigErrors& errors() const { return errors_; }
  // A reader for the sub-table `key` (nullopt when absent; an error when not a table).
  std::optional<FieldReader> section(const std::string& key);

 private:
  const toml::node* get(const std::string& key);
  void wrong_type(const std::string& key, const std::string& expected);

  const toml::table& table_;
  std::string section_;
  std::string path_;
  ConfigErrors& errors_;
  std::set<std::string> read_;
};

}  // namespace caesium::daemon
