// Command-line parsing for `caesium` and `caesium-bench`: one parser (CLI11), one
// behaviour, one error style.
//
//   - `--x=y` and `--x y` alike for every option (a value that starts with '-' must use
//     the `=` form); a switch takes no value;
//   - `--help` on every command prints its help to `out`, exit 0; `--help-all` at the top
//     prints every command's;
//   - a usage error, found by the parser or by the command after it, prints
//     "<program> <command>: <what is wrong>" and "run '<program> <command> --help' for
//     usage" on `err`, exit 2.  The same wording everywhere: "unknown option '--x'",
//     "unexpected argument 'x'", "unknown command 'x'", "missing NAME", "--x needs a
//     value", "--x is given twice", "--x takes no value", "--x: <why the value is bad>".
//
// docs/cli.md is the user reference; tests/unit/cli_docs_test.cpp checks that it lists
// exactly the commands and options the parser knows.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"

namespace caesium::cli {

// Parses `args` (without the program name) with `app`, whose callbacks run the chosen
// command.  Returns the exit status when parsing ended the run (help: 0, an error: 2),
// nullopt when the callbacks ran.
std::optional<int> parse_command_line(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err);

// Reports a usage problem a command found after parsing, in the same style; returns 2.
int usage_error(const CLI::App& command, const std::string& message, std::ostream& err);

// "caesium put": the program and command names down to `command`.
std::string command_path(const CLI::App& command);

// A switch: an option without a value, refused with one ("--json=yes").  Bound to
// `value` when given, else read back from the option's count.
CLI::Option* add_switch(CLI::App& app, const std::string& name, const std::string& help, bool* value = nullptr);

// A validator from a parse function: the value is good when `check` returns no error;
// otherwise the error's message is what the user sees, after "--option: ".
CLI::Validator checked_by(std::function<Status(const std::string&)> check);
// A whole number in [min, max] (any 64-bit one by default).
CLI::Validator whole_number(int64_t min = INT64_MIN, int64_t max = INT64_MAX);
// A duration text ("500ms", "10s", "1h30m") of at least `min_ms`.
CLI::Validator duration_at_least(int64_t min_ms);

}  // namespace caesium::cli
