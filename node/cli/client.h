// The `caesium` client commands (put, get, ls, rm, history, status, config) against a
// node's HTTP API — docs/cli.md is the user reference.  client_cmd.cpp declares their
// options; this is what they do once parsed, with the transport passed in so the tests
// drive it with a fake.
//
// Where to connect and with which token, first found wins:
//   address  --api HOST:PORT (or a URL)  >  $CAESIUM_API  >  api.listen of --config FILE
//   token    --token-file FILE           >  $CAESIUM_TOKEN (the token itself)  >
//            api.token_file of --config FILE
//   CA       --ca-file FILE (https only)   >  $CAESIUM_CA_FILE  >  api.tls_ca of --config FILE
//   client certificate (for nodes that verify clients): --cert-file and --key-file, or
//            with --config, the node's own api.tls_cert and api.tls_key
// A --config whose node speaks TLS (api.tls_cert) makes the address https://.  A token,
// address or file name with a control character (CR, LF, ...) is refused before anything
// is sent: it could end a header line and start another.
// Exit status: 0 success, 1 the API answered an error or could not be reached,
// 2 bad usage (message on stderr).  Output: human-readable tables, or with --json the
// API's JSON as it came.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace caesium::cli {

struct ClientTarget {
  std::string base_url;  // "http://127.0.0.1:7400"
  std::string token;     // "" = none (the API will answer 401)
  std::string ca_file;   // "" = the system's CAs (https only)
  std::string cert_file; // client certificate, "" = none
  std::string key_file;
  // Sent as an Idempotency-Key header with every request of the command ("" = none):
  // caesium trigger --idempotency-key.
  std::string idempotency_key;
};

struct ClientFlags {
  std::optional<std::string> api;
  std::optional<std::string> token_file;
  std::optional<std::string> config;
  std::optional<std::string> ca_file;
  std::optional<std::string> cert_file;
  std::optional<std::string> key_file;
};

using EnvFn = std::function<std::optional<std::string>(const char* name)>;
EnvFn process_env();

// Resolves the target by the precedence above.  Errors say how to give what is missing.
Result<ClientTarget> resolve_client_target(const ClientFlags& flags, const EnvFn& env);

struct ClientResponse {
  bool connected = false;  // false: no HTTP answer (`error` says why)
  long status = 0;
  std::string body;
  std::string error;
};
// One HTTP exchange: method, path (with query), body (JSON or empty).
using ClientTransport = std::function<ClientResponse(const std::string& method, const std::string& path,
                                                     const std::string& body)>;
// libcurl's easy interface (blocking: fine in a CLI).
ClientTransport curl_transport(const ClientTarget& target, int64_t timeout_ms);

using ConnectFn = std::function<ClientTransport(const ClientTarget& target, int64_t timeout_ms)>;

// A client command's parsed arguments, by option name ("--cron"), as given.
struct ClientArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::vector<std::string>> values;  // options that take a value
  std::set<std::string> switches;                          // options without one that were given

  std::optional<std::string> value(const std::string& option) const {
    auto it = values.find(option);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  bool has(const std::string& option) const { return switches.count(option) > 0; }
};

// Reports a usage problem the parser could not see (e.g. "--cron or a timer, not both")
// and returns the exit status, 2.
using UsageErrorFn = std::function<int(const std::string& message)>;

// Runs client command `command` ("put", "config apply", ...) with `args`.  Reads files
// named by --file / --payload-file / `config apply FILE` ("-" = stdin).
int run_client_command(const std::string& command, const ClientArgs& args, std::ostream& out, std::ostream& err,
                       const EnvFn& env, const ConnectFn& connect, const UsageErrorFn& usage_error);

// --- rendering (client_render.cpp) ------------------------------------------------------
// Columns padded to their widest cell, two spaces apart, no trailing spaces; control
// characters in cells shown as spaces.  `rows` may be ragged (missing cells are empty).
std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// "every 20s for 2m", "cron 0 9 * * * (Europe/London)", "at 2026-...", "after 1h".
std::string describe_timing(const nlohmann::json& entry);
// The entry's retry policy for people ("3 attempts, backoff 1s doubling to 1m, jitter
// 0.2"), or "" when it does not retry.
std::string describe_retry(const nlohmann::json& entry);
std::string render_entry(const nlohmann::json& entry);
std::string render_entry_list(const nlohmann::json& list);
std::string render_history(const nlohmann::json& history);
std::string render_status(const nlohmann::json& status);
std::string render_config(const nlohmann::json& config);

}  // namespace caesium::cli
