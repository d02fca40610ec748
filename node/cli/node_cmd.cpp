// caesium node --config FILE [--log-level debug|info|warn|error] [--first-start]
//
// Runs one node until SIGTERM/SIGINT (graceful leave, exit 0; a second signal exits at
// once).  SIGHUP reloads handlers and the log level.  A config, key or data-directory
// problem is reported on stderr with exit status 2.  node/daemon/runtime/runtime.h has
// the rest.
#include <uv.h>

#include <csignal>
#include <memory>
#include <string>

#include "node/cli/commands.h"
#include "node/cli/parse.h"
#include "node/daemon/config/config.h"
#include "node/daemon/runtime/glibc_tunables.h"
#include "node/daemon/runtime/log.h"
#include "node/daemon/runtime/runtime.h"

namespace caesium::cli {
namespace {

// glibc keeps at most 7 freed blocks of each size in a thread's cache by default; the
// rest go back to the arena's bins.  A burst of due occurrences allocates and frees
// thousands of small blocks of a few sizes per loop iteration (records, messages, keys),
// so most of them took the arena's slow path (sorting the unsorted bin, unlinking,
// consolidating fast bins whenever a larger block was asked for): ~20% of the nodes' CPU
// in `caesium-bench cluster`.  A cache of 16,000 per size serves them from the cache:
// ~10-20% less CPU per occurrence in interleaved A/B runs, no more resident memory
// (docs/operations.md, *Memory allocator*).  A binary linked with mimalloc (the default
// build, CAESIUM_MIMALLOC) does not use glibc's malloc, and does not run itself again.
constexpr const char* kNodeTunables = "glibc.malloc.tcache_count=16000";

struct NodeOptions {
  std::string config_path;
  std::string log_level;  // "" = the config file's
  bool first_start = false;
};

int run_node(const NodeOptions& o, Io& io) {
  using namespace caesium::daemon;
  if (io.argv != nullptr && io.allocator == "glibc malloc") rerun_with_glibc_tunables(kNodeTunables, io.argc - 1, io.argv + 1);
  RuntimeOptions options;
  options.install_signal_handlers = true;
  options.first_start = o.first_start;
  if (!o.log_level.empty()) options.log_level = parse_log_level(o.log_level).value();  // checked by the parser
  auto config = load_config(o.config_path);
  if (!config) {
    io.err << "caesium node: " << config.error().message << "\n";
    return 2;
  }
  // A peer closing a connection must be an error on that write, not the end of us.
  std::signal(SIGPIPE, SIG_IGN);
  uv_loop_t* loop = uv_default_loop();
  auto rt = Runtime::start(loop, std::move(*config), options);
  if (!rt) {
    io.err << "caesium node: " << rt.error().message << "\n";
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

void add_node_command(CLI::App& root, Io& io, int& exit_code) {
  CLI::App* node = root.add_subcommand("node", "run a node (SIGTERM: leave and stop; SIGHUP: reload)");
  auto o = std::make_shared<NodeOptions>();
  node->add_option("--config", o->config_path, "the node's TOML config (docs/config.md)")
      ->type_name("FILE")
      ->required();
  node->add_option("--log-level", o->log_level, "debug, info, warn or error (default: the config's log_level)")
      ->type_name("LEVEL")
      ->check(checked_by([](const std::string& text) -> Status {
        auto level = daemon::parse_log_level(text);
        return level.ok() ? Status::success() : Status(level.error());
      }));
  node->add_flag("--first-start", o->first_start,
                 "this node never ran before: with an empty data directory it votes at once instead of "
                 "abstaining like a wiped node (never after a disk loss; docs/firing.md, Amnesia)");
  node->callback([o, &io, &exit_code] { exit_code = run_node(*o, io); });
}

}  // namespace caesium::cli
