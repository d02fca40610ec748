// Subcommands of the `caesium` binary register themselves, so adding one is adding a
// file under node/cli/.
//
//   static int run_cron(int argc, char** argv);   // argv[0] is the command name
//   CAESIUM_COMMAND("cron", "cron next EXPR [--tz ZONE] [--from RFC3339] [-n N]", run_cron);
//
// Exit status convention: 0 success, 1 the job ran and found a failure (e.g. an
// invariant violation), 2 bad usage or bad input (message on stderr).
#pragma once

#include <functional>
#include <map>
#include <string>

namespace caesium::cli {

using CommandFn = std::function<int(int argc, char** argv)>;

struct Command {
  std::string usage;
  CommandFn fn;
};

std::map<std::string, Command>& commands();

struct Registration {
  Registration(const char* name, const char* usage, CommandFn fn);
};

}  // namespace caesium::cli

#define CAESIUM_CMD_CAT2(a, b) a##b
#define CAESIUM_CMD_CAT(a, b) CAESIUM_CMD_CAT2(a, b)
#define CAESIUM_COMMAND(name, usage, fn) \
  static const ::caesium::cli::Registration CAESIUM_CMD_CAT(cmd_reg_, __LINE__)(name, usage, fn)
