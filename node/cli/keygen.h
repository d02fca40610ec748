// `caesium keygen`: make and rotate cluster key files (the wire::Keyring text format of
// node/wire/frame.h: one `primary = <base64>` line, any number of `accept = <base64>`).
// docs/keys.md has the rotation procedure.  The CLI (node/cli/keygen_cmd.cpp) only
// prints what run_keygen returns, so the logic is unit-tested here.
//
//   caesium keygen [--out FILE] [--force]     a fresh key file (stdout without --out)
//   caesium keygen --add-to FILE              fresh primary; old keys kept as accepted
//   caesium keygen --add-to FILE --accept-only   fresh key added as accepted only
//   caesium keygen --promote FILE             the newest accepted key becomes primary
//   caesium keygen --drop-accepted FILE       keep only the primary
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "node/wire/frame.h"

namespace caesium::daemon {

struct KeygenRun {
  int exit_code = 0;  // 0 ok, 1 the file operation failed, 2 bad usage or bad key file
  std::string out;    // for stdout
  std::string err;    // for stderr
};

// `args` are the words after "keygen".
KeygenRun run_keygen(const std::vector<std::string>& args);

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

}  // namespace caesium::daemon
