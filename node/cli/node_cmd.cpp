// caesium node --config FILE [--log-level debug|info|warn|error]
//
// Runs one node until SIGTERM/SIGINT (graceful leave, exit 0; a second signal exits at
// once).  SIGHUP reloads handlers and the log level.  A config, key or data-directory
// problem is reported on stderr with exit status 2.  node/daemon/runtime/runtime.h has the rest.
#include <uv.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "node/cli/command.h"
#include "node/daemon/runtime/glibc_tunables.h"
#include "node/daemon/runtime/log.h"
#include "node/daemon/runtime/runtime.h"

namespace {

int usage_error(const std::string& message) {
  std::fprintf(stderr, "caesium node: %s\nusage: caesium node --config FILE [--log-level debug|info|warn|error]\n",
               message.c_str());
  return 2;
}

// glibc keeps at most 7 freed blocks of each size in a thread's cache by default; the
// rest go back to the arena's bins.  A burst of due occurrences allocates and frees
// thousands of small blocks of a few sizes per loop iteration (records, messages, keys),
// so most of them took the arena's slow path (sorting the unsorted bin, unlinking,
// consolidating fast bins whenever a larger block was asked for): ~20% of the nodes' CPU
// in `caesium-bench cluster`.  A cache of 16,000 per size serves them from the cache:
// ~10-20% less CPU per occurrence in interleaved A/B runs, no more resident memory
// (docs/operations.md, README).
constexpr const char* kNodeTunables = "glibc.malloc.tcache_count=16000";

int run_node(int argc, char** argv) {
  using namespace caesium::daemon;
  rerun_with_glibc_tunables(kNodeTunables, argc, argv);
  std::string config_path;
  RuntimeOptions options;
  options.install_signal_handlers = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      if (a.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      if (a == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--config")) {
      config_path = v;
    } else if (const char* l = value("--log-level")) {
      auto level = parse_log_level(l);
      if (!level) return usage_error("--log-level: " + level.error().message);
      options.log_level = *level;
    } else if (a == "--help" || a == "-h") {
      std::puts("usage: caesium node --config FILE [--log-level debug|info|warn|error]");
      return 0;
    } else {
      return usage_error("unknown argument '" + a + "'");
    }
  }
  if (config_path.empty()) return usage_error("--config FILE is required");

  auto config = load_config(config_path);
  if (!config) {
    std::fprintf(stderr, "caesium node: %s\n", config.error().message.c_str());
    return 2;
  }
  // A peer closing a connection must be an error on that write, not the end of us.
  std::signal(SIGPIPE, SIG_IGN);
  uv_loop_t* loop = uv_default_loop();
  auto rt = Runtime::start(loop, std::move(*config), options);
  if (!rt) {
    std::fprintf(stderr, "caesium node: %s\n", rt.error().message.c_str());
    uv_run(loop, UV_RUN_DEFAULT);  // lets the half-opened sockets close
    return 2;
  }
  int status = 1;
  (*rt)->set_on_stopped([&status](int s) { status = s; });
  uv_run(loop, UV_RUN_DEFAULT);
  rt->reset();
  uv_loop_close(loop);
  return status;
}

}  // namespace

CAESIUM_COMMAND("node", "node --config FILE [--log-level L]   run a node (SIGTERM: leave and stop)", run_node);
