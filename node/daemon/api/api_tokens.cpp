// Scoped API tokens: the tokens file, digests and the constant-time lookup (api_tokens.h).
#include "node/daemon/api/api_tokens.h"

#include <sodium.h>

#include <fstream>
#include <map>
#include <sstream>

#include "base/toml/toml_reader.h"
#include "node/core/cluster_config.h"

namespace caesium::daemon {

namespace {

constexpr size_t kMinSecretBytes = 16;
constexpr size_t kMaxSecretBytes = 4096;

std::array<unsigned char, 32> digest_of(std::string_view secret) {
  std::array<unsigned char, 32> d{};
  crypto_generichash(d.data(), d.size(), reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
                     nullptr, 0);
  return d;
}

// A secret fit for a header and for the file: visible ASCII only, no spaces.
bool visible_ascii(std::string_view s) {
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

Result<std::string> read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(std::string("cannot read the API ") + what + " " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void read_token(TomlReader& r, TokenSet& out, std::map<std::string, std::string>& names,
                std::map<std::array<unsigned char, 32>, std::string>& digests) {
  r.allow_only({"name", "token", "scope", "volumes"});
  auto name = r.string("name");
  auto secret = r.string("token");
  auto scope_text = r.string("scope");
  auto volumes = r.has("volumes") ? r.strings("volumes") : std::optional<std::vector<std::string>>(std::vector<std::string>{});
  bool ok = name && secret && scope_text && volumes;
  if (!r.has("name")) r.fail("name", "missing: every token needs a name (for logs; never the secret)");
  if (!r.has("token")) r.fail("token", "missing: the bearer token itself");
  if (!r.has("scope")) r.fail("scope", "missing: read, write or admin");
  if (name && (name->empty() || name->size() > 128 || !visible_ascii(*name))) {
    r.fail("name", "must be 1..128 visible ASCII characters without spaces");
    ok = false;
  }
  if (name && names.count(*name) != 0) {
    r.fail("name", "\"" + *name + "\" names another token too (at " + names[*name] + ")");
    ok = false;
  }
  // Messages about the secret never quote it.
  if (secret && (secret->size() < kMinSecretBytes || secret->size() > kMaxSecretBytes)) {
    r.fail("token", "must be " + std::to_string(kMinSecretBytes) + ".." + std::to_string(kMaxSecretBytes) +
                        " characters long (caesium keygen or `openssl rand -hex 32` makes a good one)");
    ok = false;
  } else if (secret && !visible_ascii(*secret)) {
    r.fail("token", "must be visible ASCII characters only: no spaces, control characters (CR, LF) or non-ASCII");
    ok = false;
  }
  std::optional<Scope> scope;
  if (scope_text) {
    scope = parse_scope(*scope_text);
    if (!scope) {
      r.fail("scope", "\"" + *scope_text + "\" is not a scope; expected read, write or admin");
      ok = false;
    }
  }
  if (volumes) {
    for (const auto& v : *volumes) {
      if (!node::valid_volume_name(v)) {
        r.fail("volumes", "\"" + v + "\" is not a volume name ([A-Za-z0-9._:-], 1..128 bytes)");
        ok = false;
      }
    }
    if (r.has("volumes") && volumes->empty()) {
      r.fail("volumes", "an empty list allows no volume at all; leave the key out for every volume");
      ok = false;
    }
  }
  if (ok) {
    const auto d = digest_of(*secret);
    if (auto it = digests.find(d); it != digests.end()) {
      r.fail("token", "the same secret as token \"" + it->second + "\": each token needs its own");
      ok = false;
    } else {
      digests.emplace(d, *name);
    }
  }
  if (name) names.emplace(*name, r.where("name"));
  r.finish();
  if (ok) out.add(*name, *secret, *scope, std::move(*volumes));
}

}  // namespace

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::kRead: return "read";
    case Scope::kWrite: return "write";
    case Scope::kAdmin: return "admin";
  }
  return "?";
}

std::optional<Scope> parse_scope(std::string_view text) {
  if (text == "read") return Scope::kRead;
  if (text == "write") return Scope::kWrite;
  if (text == "admin") return Scope::kAdmin;
  return std::nullopt;
}

bool ApiToken::allows_volume(const std::string& volume) const {
  if (volumes.empty()) return true;
  for (const auto& v : volumes) {
    if (v == volume) return true;
  }
  return false;
}

void TokenSet::add(std::string name, std::string_view secret, Scope scope, std::vector<std::string> volumes) {
  ApiToken t;
  t.name = std::move(name);
  t.digest = digest_of(secret);
  t.scope = scope;
  t.volumes = std::move(volumes);
  tokens_.push_back(std::move(t));
}

const ApiToken* TokenSet::find(std::string_view presented) const {
  // Hash once, then compare with every digest: the time depends on the number of tokens
  // only, not on which (if any) matched or how much of it.
  const auto d = digest_of(presented);
  const ApiToken* found = nullptr;
  for (const auto& t : tokens_) {
    const bool same = sodium_memcmp(d.data(), t.digest.data(), d.size()) == 0;
    if (same && found == nullptr) found = &t;
  }
  return found;
}

bool is_header_safe(std::string_view value) {
  if (value.empty()) return false;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

Result<std::string> read_token_file(const std::string& path) {
  auto text = read_text(path, "token file");
  if (!text) return Error(text.error().message, "api.token_file");
  std::string t = std::move(*text);
  const char* ws = " \t\r\n";
  const size_t b = t.find_first_not_of(ws);
  if (b == std::string::npos) return Error("the API token file " + path + " is empty", "api.token_file");
  t = t.substr(b, t.find_last_not_of(ws) - b + 1);
  if (!is_header_safe(t)) {
    return Error("the API token in " + path + " contains a control character (a line break inside it?): " +
                     "a token must be one line of printable characters",
                 "api.token_file");
  }
  return t;
}

Status read_tokens_file(const std::string& path, TokenSet& out) {
  auto text = read_text(path, "tokens file");
  if (!text) return Error(text.error().message, "api.tokens_file");
  auto doc = parse_toml(*text, path);
  if (!doc) return doc.error();
  TomlErrors errors;
  TomlReader top(*doc, "", path, errors);
  top.allow_only({"token"});
  std::map<std::string, std::string> names;
  std::map<std::array<unsigned char, 32>, std::string> digests;
  // Into a copy, so that a file with a mistake adds none of its tokens.
  TokenSet read = out;
  const auto tables = top.tables("token");
  for (size_t i = 0; i < tables.size(); ++i) {
    TomlReader r(*tables[i], "token[" + std::to_string(i + 1) + "]", path, errors);
    toml_guard([&] { read_token(r, read, names, digests); });
  }
  top.finish();
  if (tables.empty() && !errors.any()) {
    errors.add(Error(path + ": no [[token]] table: the file gives no token", "token"));
  }
  if (errors.any()) return errors.combined();
  out = std::move(read);
  return Status::success();
}

Result<TokenSet> load_api_tokens(const std::string& token_file, const std::string& tokens_file) {
  TokenSet set;
  if (!token_file.empty()) {
    auto t = read_token_file(token_file);
    if (!t) return t.error();
    set.add("token_file", *t, Scope::kAdmin);
  }
  if (!tokens_file.empty()) {
    if (Status s = read_tokens_file(tokens_file, set); !s.ok()) return s.error();
  }
  return set;
}

}  // namespace caesium::daemon
