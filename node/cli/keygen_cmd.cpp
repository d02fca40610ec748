// caesium keygen [--out FILE [--force]] | --add-to FILE [--accept-only] | --promote FILE
//                | --drop-accepted FILE
//
// Makes and rotates cluster key files.  The logic is keygen.h; this file reads the flags
// and prints.  Exit status: 0 ok, 1 a file could not be read or written (or --out names
// an existing file without --force), 2 bad usage or a bad key file.
#include <memory>

#include "node/cli/commands.h"
#include "node/cli/keygen.h"
#include "node/cli/parse.h"

namespace caesium::cli {

void add_keygen_command(CLI::App& root, Io& io, int& exit_code) {
  CLI::App* keygen = root.add_subcommand("keygen", "make and rotate cluster key files (docs/keys.md)");
  keygen->footer("Without a file option, a fresh key file is printed on stdout.");
  auto o = std::make_shared<KeygenOptions>();
  keygen->add_option("--out", o->out, "write a fresh key file here (mode 0600)")->type_name("FILE");
  add_switch(*keygen, "--force", "with --out: replace an existing file", &o->force);
  keygen->add_option("--add-to", o->add_to, "a fresh primary key; the old keys stay accepted")->type_name("FILE");
  add_switch(*keygen, "--accept-only", "with --add-to: add the fresh key as accepted only", &o->accept_only);
  keygen->add_option("--promote", o->promote, "the newest accepted key becomes the primary")->type_name("FILE");
  keygen->add_option("--drop-accepted", o->drop_accepted, "keep only the primary key")->type_name("FILE");
  keygen->callback([keygen, o, &io, &exit_code] {
    if (Status s = check_keygen_options(*o); !s.ok()) {
      exit_code = usage_error(*keygen, s.error().message, io.err);
      return;
    }
    const KeygenRun run = run_keygen(*o);
    io.out << run.out;
    io.err << run.err;
    exit_code = run.exit_code;
  });
}

}  // namespace caesium::cli
