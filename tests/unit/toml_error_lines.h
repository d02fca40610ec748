// Checks on a load's errors as the user sees them: one per line, each
// "<file>:<line>:<column>: <dotted.key>: <what>" (base/toml/toml_reader.h).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace caesium::test {

inline std::vector<std::string> error_lines(const std::string& message) {
  std::vector<std::string> out;
  std::istringstream in(message);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every line has the shape above, for a file matching `file_regex`, and each of
// `expected` begins one of them.
inline void check_error_lines(const std::string& message, const std::string& file_regex,
                              const std::vector<std::string>& expected) {
  INFO(message);
  const std::vector<std::string> lines = error_lines(message);
  const std::regex shape(file_regex + R"(:[0-9]+:[0-9]+: [A-Za-z0-9_.\[\]]+: .+)");
  for (const auto& l : lines) {
    INFO(l);
    CHECK(std::regex_match(l, shape));
  }
  for (const auto& e : expected) {
    INFO("expected a line beginning: " << e);
    CHECK(std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(e, 0) == 0; }));
  }
}

}  // namespace caesium::test
