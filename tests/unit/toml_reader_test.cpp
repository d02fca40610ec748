// The strict TOML reader (base/toml/toml_reader.h): every error collected, each with
// file:line:column and the dotted key; unknown keys in file order; stop() abandoning one
// table and toml_guard() letting the next be read.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/toml/toml_reader.h"
#include "tests/unit/toml_error_lines.h"

using namespace caesium;

namespace {

toml::table parse(const std::string& text) {
  auto t = parse_toml(text, "t.toml");
  REQUIRE(t.ok());
  return std::move(t.value());
}

// The errors are exactly `expected`, in order (each message begins with its line), each
// "<file>:<line>:<column>: <key>: <what>" with Error::field the key.
void check_errors(const TomlErrors& errors, const std::vector<std::string>& expected) {
  REQUIRE(errors.all().size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Error& e = errors.all()[i];
    INFO(e.message);
    CHECK(e.message.rfind(expected[i], 0) == 0);
    CHECK_FALSE(e.field.empty());
    CHECK(e.message.find(": " + e.field + ": ") != std::string::npos);
  }
  test::check_error_lines(errors.combined().message, R"(t\.toml)", expected);
}

}  // namespace

TEST_CASE("toml: every error of a table is collected, and reading goes on", "[toml]") {
  const toml::table t = parse(
      "name = 5\n"                 // 1: wrong type
      "count = 70000\n"            // 2: out of range
      "ratio = \"half\"\n"         // 3: wrong type
      "every = \"1x\"\n"           // 4: not a duration
      "size = \"12XB\"\n"          // 5: bad unit
      "tags = [\"a\", 2]\n"        // 6: an item of the wrong type
      "ok = true\n"
      "[gossip]\n"
      "probe = \"-1s\"\n");        // 9: negative
  TomlErrors errors;
  TomlReader r(t, "", "t.toml", errors);
  CHECK_FALSE(r.string("name"));
  CHECK_FALSE(r.integer("count", 0, 65535));
  CHECK_FALSE(r.number("ratio", 0, 1));
  CHECK_FALSE(r.duration("every"));
  CHECK_FALSE(r.size_bytes("size", 0, UINT64_MAX));
  CHECK_FALSE(r.strings("tags"));
  CHECK(r.boolean("ok") == true);
  CHECK_FALSE(r.string("absent"));  // absent: no value, no error
  auto gossip = r.section("gossip");
  REQUIRE(gossip);
  CHECK_FALSE(gossip->duration("probe"));
  gossip->finish();
  r.finish();
  check_errors(errors, {
                           "t.toml:1:1: name: expected a string",
                           "t.toml:2:1: count: 70000 is out of range [0, 65535]",
                           "t.toml:3:1: ratio: expected a number",
                           "t.toml:4:1: every: \"1x\" is not a duration",
                           "t.toml:5:1: size: \"12XB\" has an unknown size unit",
                           "t.toml:6:14: tags: item 1 is not a string",
                           "t.toml:9:1: gossip.probe: \"-1s\" is not a duration",
                       });
  CHECK(errors.all()[6].field == "gossip.probe");
  // As one Error: every message, one per line, the first error's field.
  const Error all = errors.combined();
  CHECK(test::error_lines(all.message).size() == 7);
  CHECK(all.field == "name");
}

TEST_CASE("toml: every unknown key is reported, in file order, once", "[toml]") {
  const toml::table t = parse("zebra = 1\nknown = 2\napple = 3\nmango = 4\n");
  TomlErrors errors;
  TomlReader r(t, "sec", "t.toml", errors);
  r.allow_only({"known", "apple"});  // zebra and mango now
  CHECK(r.integer("known", 0, 9) == 2);
  r.finish();                        // apple, never read; not zebra or mango again
  check_errors(errors, {"t.toml:1:1: sec.zebra: unknown key", "t.toml:4:1: sec.mango: unknown key",
                        "t.toml:3:1: sec.apple: unknown key"});
}

TEST_CASE("toml: stop() abandons one table, toml_guard lets the next be read", "[toml]") {
  const toml::table t = parse(
      "[[fault]]\ncrash = \"n1\"\n"                // no `at`: stopped
      "[[fault]]\nat = \"1s\"\ncrash = 5\n"        // a type error, read on
      "[[fault]]\nat = \"2s\"\ncolour = \"red\"\n");  // an unknown key
  TomlErrors errors;
  TomlReader top(t, "", "t.toml", errors);
  int finished = 0;
  const auto faults = top.tables("fault");
  REQUIRE(faults.size() == 3);
  for (size_t i = 0; i < faults.size(); ++i) {
    toml_guard([&] {
      TomlReader r(*faults[i], "fault[" + std::to_string(i) + "]", top.path(), top.errors());
      if (!r.duration("at")) r.stop_here("a fault needs at = \"<duration>\"");
      (void)r.one_or_many("crash");
      r.finish();
      ++finished;
    });
  }
  top.finish();
  CHECK(finished == 2);
  check_errors(errors, {"t.toml:1:1: fault[0]: a fault needs at = \"<duration>\"",
                        "t.toml:5:1: fault[1].crash: expected a string or an array of strings",
                        "t.toml:8:1: fault[2].colour: unknown key"});
  CHECK(errors.all()[0].field == "fault[0]");
}

TEST_CASE("toml: wrong shapes of tables, arrays and values", "[toml]") {
  const toml::table t = parse(
      "handler = 3\n"
      "env = { A = 1 }\n"
      "gossip = \"fast\"\n"
      "nodes = [1, 2]\n"
      "loss = nan\n"
      "offset = \"-2s\"\n"
      "zero = 0\n");
  TomlErrors errors;
  TomlReader r(t, "", "t.toml", errors);
  CHECK(r.tables("handler").empty());
  CHECK_FALSE(r.string_map("env"));
  CHECK_FALSE(r.section("gossip"));
  CHECK(r.array("nodes") != nullptr);
  CHECK_FALSE(r.probability("loss"));
  CHECK(r.signed_duration("offset") == -2000);
  CHECK(r.duration("zero") == 0);
  r.finish();
  check_errors(errors, {"t.toml:1:1: handler: expected an array of tables ([[handler]])",
                        "t.toml:2:1: env: value of 'A' is not a string", "t.toml:3:1: gossip: expected a table",
                        "t.toml:5:1: loss: nan is out of range [0, 1]"});
}

TEST_CASE("toml: a syntax error is one error at its position, sizes", "[toml]") {
  auto bad = parse_toml("a = 1\nb = \n", "t.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("t.toml:2:", 0) == 0);
  CHECK(bad.error().message.find("TOML syntax: ") != std::string::npos);

  CHECK(*parse_size_bytes("0") == 0);
  CHECK(*parse_size_bytes("512B") == 512);
  CHECK(*parse_size_bytes("64KiB") == 64 * 1024);
  CHECK(*parse_size_bytes("1GB") == (uint64_t{1} << 30));
  CHECK_FALSE(parse_size_bytes("MiB").ok());
  CHECK_FALSE(parse_size_bytes("20000000TiB").ok());
  CHECK(*parse_signed_duration_ms("-500ms") == -500);
  CHECK_FALSE(parse_signed_duration_ms("--5s").ok());
}
