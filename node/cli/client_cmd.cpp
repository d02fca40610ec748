// The client subcommands of `caesium` (put, get, ls, rm, history, status, config): thin
// registrations; the work and the usage lines are in node/cli/client.h
// (docs/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include "node/cli/command.h"
#include "node/cli/client.h"

namespace {

const bool registered = [] {
  for (const auto& [name, usage] : caesium::daemon::client_command_usages()) {
    const std::string command = name;
    caesium::cli::Registration(name.c_str(), usage.c_str(), [command](int argc, char** argv) {
      std::vector<std::string> words(argv + 1, argv + argc);
      return caesium::daemon::run_client_command(command, words, std::cout, std::cerr, caesium::daemon::process_env(),
                                                 caesium::daemon::curl_transport);
    });
  }
  return true;
}();

}  // namespace
