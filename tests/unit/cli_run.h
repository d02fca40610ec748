// Runs the `caesium` command line in-process (node/cli/commands.h) with fakes: the
// output streams captured, the environment a map, the API transport a FakeApi, and the
// clock fixed.
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/time.h"
#include "node/cli/commands.h"

namespace caesium::test {

struct CliRun {
  int status = 0;
  std::string out, err;
};

struct FakeCli {
  std::map<std::string, std::string> env;
  cli::ConnectFn connect = [](const cli::ClientTarget&, int64_t) -> cli::ClientTransport {
    return [](const std::string&, const std::string&, const std::string&) {
      return cli::ClientResponse{false, 0, "", "no transport in this test"};
    };
  };
  int64_t now_utc_ms = parse_rfc3339_ms("2026-03-28T12:00:00Z").value();

  CliRun run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    cli::Io io{out,
               err,
               [this](const char* name) -> std::optional<std::string> {
                 auto it = env.find(name);
                 if (it == env.end()) return std::nullopt;
                 return it->second;
               },
               connect,
               [this] { return now_utc_ms; }};
    const int status = cli::run_caesium(args, io);
    return {status, out.str(), err.str()};
  }
};

}  // namespace caesium::test
