// The `caesium` binary: one command tree, one parser (node/cli/parse.h).
//
//   caesium node      run a node                                node_cmd.cpp
//   caesium put | get | ls | rm | history | status | config
//                     client commands against a node's API      client_cmd.cpp, client.h
//   caesium cron next preview a cron expression                 cron_cmd.cpp
//   caesium keygen    make and rotate cluster key files         keygen_cmd.cpp, keygen.h
//   caesium sim       run the deterministic simulator           sim_cmd.cpp
//   caesium version   print the version
//
// docs/cli.md is the reference for all of them.  Exit status convention: 0 success, 1 the
// job ran and found a failure (an API error, an invariant violation), 2 bad usage or bad
// input (message on stderr).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "node/cli/client.h"

namespace caesium::cli {

// Everything a command touches besides its arguments, passed in so that the tests run
// every command in-process, with fakes.
struct Io {
  std::ostream& out;
  std::ostream& err;
  EnvFn env;                            // environment variables
  ConnectFn connect;                    // the client commands' HTTP transport
  std::function<int64_t()> now_utc_ms;  // the wall clock (cron next's default --from)
  // The process's own command line, for the commands that run themselves again with
  // glibc tunables (node, sim).  Tests leave it empty, and nothing runs again.
  int argc = 0;
  char** argv = nullptr;
  // The binary's allocator (node/cli/allocator.h): `caesium version` names it, and the
  // glibc tunables that `node` and `sim` run themselves again with apply only to glibc's.
  std::string allocator = "glibc malloc";
};

// Each adds its command(s) to `root`; the callback of the command that runs stores its
// exit status in `exit_code`.  `io` must outlive `root`.
void add_node_command(CLI::App& root, Io& io, int& exit_code);
void add_client_commands(CLI::App& root, Io& io, int& exit_code);
void add_cron_command(CLI::App& root, Io& io, int& exit_code);
void add_keygen_command(CLI::App& root, Io& io, int& exit_code);
void add_sim_command(CLI::App& root, Io& io, int& exit_code);

// The whole tree.
std::unique_ptr<CLI::App> caesium_app(Io& io, int& exit_code);

// Parses `args` (the words after the program name) and runs the command they name.
int run_caesium(const std::vector<std::string>& args, Io& io);

}  // namespace caesium::cli
