// TomlReader: typed, position-aware reading of one TOML table for the scenario loader.
//
// Every get_* marks the key as known; finish() then rejects any key that was never
// asked for, so a typo ("durration") is an error naming the key and its file:line
// instead of being silently ignored.  A value of the wrong type or out of range is an
// error naming the full key ("network.loss") and its position.
//
// Errors are thrown as TomlReadError inside the loader and turned into a caesium::Error
// at its boundary (scenario.cpp), so parsing code reads straight through.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "base/result.h"

namespace caesium::sim {

struct TomlReadError {
  Error error;
};

// "file:line:col" of a node ("file" when the node has no position).
std::string toml_where(const std::string& path, const toml::node& node);

class TomlReader {
 public:
  // `section` is the dotted name used in messages ("network", "fault[3]").
  TomlReader(const toml::table& table, std::string section, const std::string& path);

  [[noreturn]] void fail(const toml::node& at, const std::string& key, const std::string& what) const;
  [[noreturn]] void fail_here(const std::string& what) const;

  bool has(const std::string& key) const { return table_.contains(key); }
  const toml::node* raw(const std::string& key);  // marks known; null when absent

  std::optional<std::string> string(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  std::optional<double> number(const std::string& key, double min, double max);
  std::optional<double> probability(const std::string& key) { return number(key, 0.0, 1.0); }
  std::optional<bool> boolean(const std::string& key);
  // A duration string ("250ms", "1h30m") or the integer 0.
  std::optional<int64_t> duration(const std::string& key);
  // A signed duration: "-2s" allowed.
  std::optional<int64_t> signed_duration(const std::string& key);
  std::optional<std::vector<std::string>> string_list(const std::string& key);
  // A string or an array of strings.
  std::optional<std::vector<std::string>> one_or_many(const std::string& key);
  const toml::table* table(const std::string& key);
  const toml::array* array(const std::string& key);

  // Rejects keys never read.  Call last.
  void finish() const;
  // Rejects, up front, every key not in `allowed` — so a misspelt key is reported as
  // such rather than as a missing required key.
  void allow_only(std::initializer_list<const char*> allowed) const;

  std::string name(const std::string& key) const { return section_.empty() ? key : section_ + "." + key; }
  const std::string& path() const { return path_; }
  const toml::table& node() const { return table_; }

 private:
  std::optional<int64_t> read_duration(const std::string& key, bool allow_negative);

  const toml::table& table_;
  std::string section_;
  const std::string& path_;
  std::set<std::string> known_;
};

// Parses a signed duration text: optional leading '-', then parse_duration_ms.
Result<int64_t> parse_signed_duration_ms(std::string_view text);

}  // namespace caesium::sim
