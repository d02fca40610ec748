// Who may do what through the API: bearer tokens, each with a scope and optionally
// limited to some volumes.  docs/api.md ("Authentication") and docs/config.md
// (`api.tokens_file`) are the user reference.
//
// Scopes are ordered; each includes the ones below it:
//   read   GET of /v1 (status, config, entries, lists, history), the dashboard's data;
//   write  read + writing entries (PUT, DELETE, the operator controls), and /timers when
//          api.chronos_requires_token;
//   admin  write + the cluster config (PUT /v1/config) and keys.
// A token limited to volumes reaches only those volumes' routes (and never PUT
// /v1/config, which changes every volume).
//
// The tokens file is TOML:
//
//     [[token]]
//     name = "dashboard"             # shown in logs and /v1/whoami; never the secret
//     token = "<at least 16 printable characters>"
//     scope = "read"                 # read | write | admin
//     volumes = ["main"]             # optional: only these volumes
//
// The single token of api.token_file (the older way) counts as an unlimited admin token
// named "token_file".  Secrets are kept only as BLAKE2b digests, compared in constant
// time with every configured token (no early exit), and never logged.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace caesium::daemon {

enum class Scope : uint8_t { kRead = 1, kWrite = 2, kAdmin = 3 };

const char* scope_name(Scope s);
std::optional<Scope> parse_scope(std::string_view text);

struct ApiToken {
  std::string name;
  std::array<unsigned char, 32> digest{};  // BLAKE2b-256 of the secret
  Scope scope = Scope::kRead;
  std::vector<std::string> volumes;  // empty = every volume

  bool allows_volume(const std::string& volume) const;
};

class TokenSet {
 public:
  // Adds a token (its secret is hashed here and not kept).
  void add(std::string name, std::string_view secret, Scope scope, std::vector<std::string> volumes = {});
  // The token whose secret is `presented`, or nullptr.  Compares with every token, in
  // constant time each, whatever matches.
  const ApiToken* find(std::string_view presented) const;
  bool empty() const { return tokens_.empty(); }
  size_t size() const { return tokens_.size(); }
  const std::vector<ApiToken>& tokens() const { return tokens_; }

 private:
  std::vector<ApiToken> tokens_;
};

// Reads the tokens file (the format above) into `out`.  Every problem is reported, one
// per line, with file:line:column and the key, never with a secret: unknown keys, a
// missing or too short token, an unknown scope, a bad volume name, two tokens with one
// name or one secret.  On an error `out` is left as it was.
Status read_tokens_file(const std::string& path, TokenSet& out);

// The node's tokens: api.token_file's (admin) and api.tokens_file's, either may be "".
Result<TokenSet> load_api_tokens(const std::string& token_file, const std::string& tokens_file);

// Whether a token or header value can go into an HTTP header as it is: no control
// characters (CR and LF above all: they would end the header and start another), no
// DEL, not empty.
bool is_header_safe(std::string_view value);

// Reads a bearer token file (api.token_file, the CLI's --token-file): its content with
// surrounding whitespace removed.  An Error when it cannot be read, holds no token, or
// the token holds a control character (it could not be sent in a header as it is).
Result<std::string> read_token_file(const std::string& path);

}  // namespace caesium::daemon
