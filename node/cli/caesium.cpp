#include <memory>

#include "node/cli/commands.h"
#include "node/cli/parse.h"

namespace caesium::cli {

namespace {
constexpr const char* kVersion = "caesium 0.1.0";
}  // namespace

std::unique_ptr<CLI::App> caesium_app(Io& io, int& exit_code) {
  auto app = std::make_unique<CLI::App>(
      "Caesium: a peer-to-peer distributed cron and timer service (docs/cli.md).", "caesium");
  app->require_subcommand(1);
  app->set_help_all_flag("--help-all", "print the help of every command and exit");
  app->set_version_flag("--version", kVersion, "print the version and exit");
  add_node_command(*app, io, exit_code);
  add_client_commands(*app, io, exit_code);
  add_cron_command(*app, io, exit_code);
  add_keygen_command(*app, io, exit_code);
  add_sim_command(*app, io, exit_code);
  CLI::App* version = app->add_subcommand("version", "print the version");
  version->callback([&io, &exit_code] {
    io.out << kVersion << "\n" << "allocator: " << io.allocator << "\n";
    exit_code = 0;
  });
  CLI::App* help = app->add_subcommand("help", "print this help (as --help does)");
  CLI::App* root = app.get();
  help->callback([root, &io, &exit_code] {
    io.out << root->get_formatter()->make_help(root, root->get_name(), CLI::AppFormatMode::Normal);
    exit_code = 0;
  });
  return app;
}

int run_caesium(const std::vector<std::string>& args, Io& io) {
  int exit_code = 0;
  auto app = caesium_app(io, exit_code);
  if (auto stopped = parse_command_line(*app, args, io.out, io.err)) return *stopped;
  return exit_code;
}

}  // namespace caesium::cli
