// `caesium keygen`: make and rotate cluster key files (the wire::Keyring text format of
// node/wire/frame.h: one `primary = <base64>` line, any number of `accept = <base64>`).
// docs/keys.md has the rotation procedure.  keygen_cmd.cpp reads the flags into
// KeygenOptions and prints what run_keygen returns.
//
//   caesium keygen [--out FILE] [--force]     a fresh key file (stdout without --out)
//   caesium keygen --add-to FILE              fresh primary; old keys kept as accepted
//   caesium keygen --add-to FILE --accept-only   fresh key added as accepted only
//   caesium keygen --promote FILE             the newest accepted key becomes primary
//   caesium keygen --drop-accepted FILE       keep only the primary
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "node/wire/frame.h"

namespace caesium::cli {

struct KeygenRun {
  int exit_code = 0;  // 0 ok, 1 the file operation failed, 2 bad usage or bad key file
  std::string out;    // for stdout
  std::string err;    // for stderr
};

struct KeygenOptions {
  std::optional<std::string> out;
  std::optional<std::string> add_to;
  std::optional<std::string> promote;
  std::optional<std::string> drop_accepted;
  bool force = false;
  bool accept_only = false;
};

// The combinations that make sense: one of --out, --add-to, --promote, --drop-accepted
// at most; --force only with --out; --accept-only only with --add-to.
Status check_keygen_options(const KeygenOptions& options);

// REQUIRES: check_keygen_options(options) succeeded.
KeygenRun run_keygen(const KeygenOptions& options);

// 32 bytes from libsodium's randombytes_buf (after sodium_init).
Result<wire::Key> generate_key();

// A key file: keys[0] is the primary, the rest are accepted, in order.
// REQUIRES: !keys.empty().
std::string key_file_text(const std::vector<wire::Key>& keys);

// The keys of a key file in the same order (primary first); an Error when the text is
// not a valid key file (the message comes from wire::Keyring::parse).
Result<std::vector<wire::Key>> read_key_list(std::string_view text);

// Writes `text` to `path` with mode 0600, atomically: a temporary file in the same
// directory (mkstemp, 0600), fsync, then link() to `path` (fails if it exists, unless
// `replace`) or rename() over it (`replace`).  A reader never sees a partial file.
Status write_key_file(const std::string& path, std::string_view text, bool replace);

}  // namespace caesium::cli
