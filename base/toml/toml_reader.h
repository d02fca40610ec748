// The one strict TOML reader: the node's config (node/daemon/config/) and the
// simulator's scenarios and node options (sim/) read their files through it.
//
// Strict: every key must be asked for, so a typo ("probe_intervall") is an error rather
// than a silently ignored setting; a value of the wrong type or out of range is an error.
// One error style: every error is collected in a TomlErrors, in the order found, each
//
//     <file>:<line>:<column>: <dotted.key>: <what is wrong>
//
// with Error::field set to the dotted key.  The position is the key's when it is there,
// else the table's.  A TOML syntax error is the one exception to "every": toml++ stops at
// the first, so the file has one error, at its position.
//
// Reading goes straight through: a getter returns the value, or nullopt (nullptr) when
// the key is absent or its value is wrong (the error recorded), and the caller reads on.
// finish() reports every key of the table that was never asked for.  The caller checks
// errors.any() once at the end and returns errors.combined().
//
// Some checks make the rest of a table meaningless (a fault without `at`): stop() and
// stop_here() record the error and abandon the table by throwing TomlStop, which the
// caller catches around each table with toml_guard(), so that the next table is still
// read and its errors collected too.  Nothing here reads a file: callers pass the text.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "base/result.h"

namespace caesium {

// Every error of one load.
class TomlErrors {
 public:
  void add(Error e) { errors_.push_back(std::move(e)); }
  bool any() const { return !errors_.empty(); }
  const std::vector<Error>& all() const { return errors_; }
  // All of them as one Error: one message per line, the first error's field.
  // REQUIRES: any().
  Error combined() const;

 private:
  std::vector<Error> errors_;
};

// Thrown by TomlReader::stop(); the error is recorded before.  See toml_guard().
struct TomlStop {};

// Runs `read`, catching the TomlStop that abandons the table it reads.
template <class F>
void toml_guard(F&& read) {
  try {
    read();
  } catch (const TomlStop&) {
  }
}

// "<file>:<line>:<column>" of a key or node; `path` alone when it has no position.
std::string toml_position(const toml::source_region& source, const std::string& path);

// Parses `text` (called `path` in messages).  A syntax error is "<file>:<line>:<column>:
// TOML syntax: <what>".
Result<toml::table> parse_toml(std::string_view text, const std::string& path);

// Sizes: a byte count or a string with a binary unit: "512B", "64KiB", "16MiB", "1GiB",
// "1TiB" (KB/MB/GB/TB and K/M/G/T are taken as the same binary units).
Result<uint64_t> parse_size_bytes(std::string_view text);

// A signed duration: an optional '-' before a duration ("-500ms").
Result<int64_t> parse_signed_duration_ms(std::string_view text);

// One TOML table of a load.  Holds references: the table and `errors` outlive it.
class TomlReader {
 public:
  // `section` is the dotted name used in messages ("gossip", "fault[3]", "" at the top).
  TomlReader(const toml::table& table, std::string section, std::string path, TomlErrors& errors);

  // --- getters: each marks its key as read -----------------------------------------------
  bool has(const std::string& key) const { return table_.contains(key); }
  // The node itself, for the caller to read by other means; nullptr when absent.
  const toml::node* raw(const std::string& key);
  std::optional<std::string> string(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  // An integer or a float in [min, max].
  std::optional<double> number(const std::string& key, double min, double max);
  std::optional<double> probability(const std::string& key) { return number(key, 0.0, 1.0); }
  std::optional<bool> boolean(const std::string& key);
  // A duration string ("250ms", "1h30m") or the integer 0, of at least `min_ms`.
  std::optional<int64_t> duration(const std::string& key, int64_t min_ms = 0);
  // A duration that may be negative ("-2s").
  std::optional<int64_t> signed_duration(const std::string& key);
  // A byte count or a size string (parse_size_bytes) in [min, max].
  std::optional<uint64_t> size_bytes(const std::string& key, uint64_t min, uint64_t max);
  std::optional<std::vector<std::string>> strings(const std::string& key);
  // A string or an array of strings.
  std::optional<std::vector<std::string>> one_or_many(const std::string& key);
  // A table of strings: { NAME = "value" }.
  std::optional<std::map<std::string, std::string>> string_map(const std::string& key);
  const toml::table* table(const std::string& key);
  const toml::array* array(const std::string& key);
  // An array of tables ([[key]]); empty when absent or not one (an error).
  std::vector<const toml::table*> tables(const std::string& key);
  // A reader for the sub-table `key`: nullopt when absent or not a table (an error).
  std::optional<TomlReader> section(const std::string& key);

  // --- errors ------------------------------------------------------------------------------
  // Records an error at `key` (its position when present, else the table's); reading goes on.
  void fail(const std::string& key, const std::string& message);
  // Records an error at `node`, about `key`.
  void fail_at(const toml::node& node, const std::string& key, const std::string& message);
  // Records an error and abandons this table (throws TomlStop; see toml_guard).
  [[noreturn]] void stop(const toml::node& node, const std::string& key, const std::string& message);
  [[noreturn]] void stop_here(const std::string& message);
  // Reports every key not in `allowed` as unknown now (before checks that would otherwise
  // report a misspelt key as a missing one); finish() does not report them again.
  void allow_only(std::initializer_list<const char*> allowed);
  // Reports every key never read as unknown, in file order.  Call last.
  void finish();

  std::string name(const std::string& key) const { return section_.empty() ? key : section_ + "." + key; }
  // "<file>:<line>:<column>" of `key`, or of the table when `key` is absent.
  std::string where(const std::string& key) const;
  const std::string& path() const { return path_; }
  const toml::table& node() const { return table_; }
  TomlErrors& errors() const { return *errors_; }

 private:
  const toml::node* get(const std::string& key);
  void wrong_type(const std::string& key, const std::string& expected);
  // The value of `key` when it is a T; nullopt when absent or another type (recorded).
  template <class T>
  std::optional<T> scalar(const std::string& key, const char* expected);
  // `key` as a toml::table or toml::array; nullptr when absent or another type (recorded).
  template <class T>
  const T* container(const std::string& key, const char* expected);
  // `v` when in [min, max]; otherwise an error ("<v><unit> is out of range [min, max]").
  template <class T>
  std::optional<T> within(const std::string& key, T v, T min, T max, const char* unit = "");
  std::optional<int64_t> read_duration(const std::string& key, bool allow_negative, int64_t min_ms);
  void report_unknown(std::vector<const toml::key*> keys);

  const toml::table& table_;
  std::string section_;
  std::string path_;
  TomlErrors* errors_;
  std::set<std::string> read_;
};

}  // namespace caesium
