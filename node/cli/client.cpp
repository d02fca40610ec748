// The client commands: arguments, target resolution, the libcurl transport, and one
// function per command.  Rendering: client_render.cpp.
#include "node/cli/client.h"

#include <curl/curl.h>

#include <cassert>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/base64.h"
#include "base/time.h"
#include "node/daemon/api/api.h"
#include "node/daemon/config/config.h"
#include "node/daemon/net/net_addr.h"
#include "schedule/entry_json.h"

namespace caesium::cli {

using daemon::DaemonConfig;
using daemon::format_host_port;
using daemon::is_wildcard_host;
using daemon::load_config;
using daemon::parse_host_port;
using daemon::percent_encode;
using daemon::read_token_file;
using nlohmann::json;

namespace {

constexpr int kOk = 0, kRemoteError = 1;

Result<std::string> read_input(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot read " + path);
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// --- one exchange and its errors ------------------------------------------------------

struct Session {
  ClientTarget target;
  ClientTransport transport;
  std::ostream& out;
  std::ostream& err;
  bool json_out = false;
  const UsageErrorFn& usage_error;

  // The JSON of a 2xx answer, or nullopt after reporting the failure on `err`.
  std::optional<json> call(const std::string& method, const std::string& path, const std::string& body = {}) {
    ClientResponse r = transport(method, path, body);
    if (!r.connected) {
      err << "caesium: cannot reach the API at " << target.base_url << ": " << r.error
          << " (is the node running with api.listen set?)\n";
      return std::nullopt;
    }
    json j = r.body.empty() ? json::object() : json::parse(r.body, nullptr, false);
    if (r.status >= 200 && r.status < 300) {
      if (j.is_discarded()) j = json::object();
      return j;
    }
    std::string message = "the API answered HTTP " + std::to_string(r.status);
    std::string field;
    if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_string()) {
      message = j["error"].get<std::string>();
      if (j.contains("field") && j["field"].is_string()) field = j["field"].get<std::string>();
    }
    if (r.status == 401) {
      err << "caesium: unauthorized (401): " << message
          << "\n  give the API token with --token-file FILE, $CAESIUM_TOKEN or --config NODE.toml\n";
    } else if (r.status == 403) {
      err << "caesium: forbidden (403): " << message
          << "\n  the token is valid but its scope or volumes do not cover this; use a token that does\n";
    } else if (r.status == 404) {
      err << "caesium: not found (404): " << message << "\n";
    } else {
      err << "caesium: HTTP " << r.status << ": " << message << (field.empty() ? "" : " [field: " + field + "]") << "\n";
    }
    return std::nullopt;
  }

  void print(const json& j, const std::string& human) {
    if (json_out) {
      out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      out << human;
    }
  }
};

std::string entry_path(const ClientArgs& a) {
  return "/v1/volumes/" + percent_encode(a.positionals[0]) + "/entities/" + percent_encode(a.positionals[1]) +
         "/schedule/" + percent_encode(a.positionals[2]);
}

std::string with_w(const std::string& path, const ClientArgs& a) {
  auto w = a.value("--w");
  return w ? path + "?w=" + percent_encode(*w) : path;
}

// A flag's value as a whole number (at most 10 digits).
Result<uint64_t> whole_number(const std::string& flag, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 10) {
    return Error(flag + " must be a whole number");
  }
  return std::stoull(text);
}

// The entry's "retry" object from --retry-attempts, --retry-backoff, --retry-max-backoff
// and --retry-jitter; null when none is given.  The API checks the ranges.
Result<json> retry_from_flags(const ClientArgs& a) {
  json r = json::object();
  if (auto n = a.value("--retry-attempts")) {
    auto attempts = whole_number("--retry-attempts", *n);
    if (!attempts) return attempts.error();
    r["attempts"] = *attempts;
  }
  if (auto b = a.value("--retry-backoff")) r["backoff"] = *b;
  if (auto m = a.value("--retry-max-backoff")) r["max_backoff"] = *m;
  if (auto jt = a.value("--retry-jitter")) {
    char* end = nullptr;
    const double fraction = jt->empty() ? 0.0 : std::strtod(jt->c_str(), &end);
    if (jt->empty() || end != jt->c_str() + jt->size() || !std::isfinite(fraction)) {
      return Error("--retry-jitter must be a fraction from 0 to 1, such as 0.2");
    }
    r["jitter"] = fraction;
  }
  return r.empty() ? json() : r;
}

// The entry document from --file / --data, or built from field flags.
Result<std::string> entry_body(const ClientArgs& a) {
  const bool from_doc = a.value("--file") || a.value("--data");
  static const std::vector<std::string> kFields = {
      "--cron", "--tz", "--jitter", "--at", "--after", "--interval", "--repeat-for", "--count", "--handler",
      "--semantics", "--misfire", "--misfire-window", "--accept-timeout", "--complete-time", "--payload",
      "--payload-file", "--bind", "--run-timeout", "--not-before", "--not-after", "--overlap",
      "--retry-attempts", "--retry-backoff", "--retry-max-backoff", "--retry-jitter", "--on-failure"};
  bool any_field = a.has("--prefer-origin") || a.has("--paused");
  for (const auto& f : kFields) any_field |= a.values.count(f) > 0;
  if (from_doc && any_field) return Error("give the entry with --file/--data or with field options, not both");
  if (a.value("--file") && a.value("--data")) return Error("give --file or --data, not both");
  if (auto f = a.value("--file")) return read_input(*f);
  if (auto d = a.value("--data")) return *d;
  json j = json::object();
  const bool timer = a.value("--at") || a.value("--after") || a.value("--interval");
  if (a.value("--cron") && timer) return Error("give --cron or a timer (--at, --after, --interval), not both");
  if (!a.value("--cron") && !timer) return Error("say when: --cron EXPR, --at TIME, --after DURATION or --interval DURATION");
  if (auto c = a.value("--cron")) j["cron"] = *c;
  if (auto tz = a.value("--tz")) j["tz"] = *tz;
  if (timer) {
    json t = json::object();
    for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
             {"--at", "at"}, {"--after", "after"}, {"--interval", "interval"}, {"--repeat-for", "repeat_for"}}) {
      if (auto v = a.value(flag)) t[key] = *v;
    }
    if (auto c = a.value("--count")) {
      auto count = whole_number("--count", *c);
      if (!count) return count.error();
      t["count"] = *count;
    }
    if (auto jt = a.value("--jitter")) t["jitter"] = *jt;
    j["timer"] = std::move(t);
  } else if (auto jt = a.value("--jitter")) {
    j["jitter"] = *jt;
  }
  for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
           {"--handler", "handler"}, {"--semantics", "semantics"}, {"--misfire", "misfire"},
           {"--misfire-window", "misfire_window"}, {"--accept-timeout", "accept_timeout"},
           {"--complete-time", "complete_time"}, {"--payload", "payload"}, {"--run-timeout", "timeout"},
           {"--not-before", "not_before"}, {"--not-after", "not_after"}, {"--overlap", "overlap"},
           {"--on-failure", "on_failure"}}) {
    if (auto v = a.value(flag)) j[key] = *v;
  }
  auto retry = retry_from_flags(a);
  if (!retry) return retry.error();
  if (!retry->is_null()) j["retry"] = std::move(*retry);
  if (auto pf = a.value("--payload-file")) {
    if (a.value("--payload")) return Error("give --payload or --payload-file, not both");
    auto bytes = read_input(*pf);
    if (!bytes) return bytes.error();
    if (schedule::is_valid_utf8(*bytes)) {
      j["payload"] = *bytes;
    } else {
      j["payload_base64"] = base64_encode(*bytes);
    }
  }
  if (auto it = a.values.find("--bind"); it != a.values.end()) j["bind"] = it->second;
  if (a.has("--prefer-origin")) j["prefer_origin"] = true;
  if (a.has("--paused")) j["paused"] = true;
  return j.dump();
}

// --- the commands ---------------------------------------------------------------------------

int cmd_put(Session& s, const ClientArgs& a) {
  auto body = entry_body(a);
  if (!body) return s.usage_error(body.error().message);
  auto j = s.call("PUT", with_w(entry_path(a), a), *body);
  if (!j) return kRemoteError;
  s.print(*j, render_entry(*j));
  return kOk;
}

int cmd_get(Session& s, const ClientArgs& a) {
  auto j = s.call("GET", entry_path(a));
  if (!j) return kRemoteError;
  s.print(*j, render_entry(*j));
  return kOk;
}

int cmd_rm(Session& s, const ClientArgs& a) {
  if (!s.call("DELETE", with_w(entry_path(a), a))) return kRemoteError;
  if (!s.json_out) s.out << "deleted " << a.positionals[1] << "/" << a.positionals[2] << " from " << a.positionals[0] << "\n";
  return kOk;
}

// Every entry under --prefix, or under ENTITY with --name-prefix: the pages of the bulk
// route, followed to the end.
int cmd_bulk_pause(Session& s, const ClientArgs& a, bool pause) {
  const auto prefix = a.value("--prefix");
  const auto name_prefix = a.value("--name-prefix");
  std::string query = prefix ? "prefix=" + percent_encode(*prefix)
                             : "entity=" + percent_encode(a.positionals[1]) + "&name_prefix=" + percent_encode(*name_prefix);
  if (auto w = a.value("--w")) query += "&w=" + percent_encode(*w);
  json changed = json::array();
  size_t unchanged = 0;
  std::string after;
  json last;
  do {
    auto j = s.call("POST", "/v1/volumes/" + percent_encode(a.positionals[0]) + (pause ? "/pause?" : "/resume?") +
                                query + "&after=" + percent_encode(after),
                    "");
    if (!j) return kRemoteError;
    for (auto& k : (*j)["changed"]) changed.push_back(k);
    unchanged += (*j)["unchanged"].get<size_t>();
    last = std::move(*j);
    after = last["next"].is_string() ? last["next"].get<std::string>() : std::string();
  } while (!after.empty());
  last["changed"] = changed;
  last["unchanged"] = unchanged;
  std::string text = std::string(pause ? "paused " : "resumed ") + std::to_string(changed.size()) + " entr" +
                     (changed.size() == 1 ? "y" : "ies") + " in " + a.positionals[0] + " (" +
                     std::to_string(unchanged) + " already " + (pause ? "paused" : "running") + ")\n";
  for (const auto& k : changed) text += "  " + k.get<std::string>() + "\n";
  s.print(last, text);
  return kOk;
}

int cmd_pause_or_resume(Session& s, const ClientArgs& a, bool pause) {
  const bool by_prefix = a.value("--prefix").has_value();
  const bool by_name_prefix = a.value("--name-prefix").has_value();
  const size_t want = by_prefix ? 1 : by_name_prefix ? 2 : 3;
  if ((by_prefix && by_name_prefix) || a.positionals.size() != want) {
    return s.usage_error("give VOLUME ENTITY NAME (one entry), VOLUME --prefix ENTITY-PREFIX, or VOLUME ENTITY "
                         "--name-prefix NAME-PREFIX");
  }
  if (by_prefix || by_name_prefix) return cmd_bulk_pause(s, a, pause);
  auto j = s.call("POST", with_w(entry_path(a) + (pause ? "/pause" : "/resume"), a), "");
  if (!j) return kRemoteError;
  s.print(*j, std::string(pause ? "paused " : "resumed ") + a.positionals[1] + "/" + a.positionals[2] + " in " +
                  a.positionals[0] + "\n" + render_entry(*j));
  return kOk;
}

int cmd_pause(Session& s, const ClientArgs& a) { return cmd_pause_or_resume(s, a, true); }

// Run now: the answer names the manual occurrence; `caesium history` shows it, "manual".
int cmd_trigger(Session& s, const ClientArgs& a) {
  auto j = s.call("POST", with_w(entry_path(a) + "/trigger", a), "");
  if (!j) return kRemoteError;
  const std::string id = j->value("id", std::string());
  const std::string scheduled = j->value("scheduled", std::string());
  s.print(*j, std::string(j->value("repeat", false) ? "already triggered " : "triggered ") + a.positionals[1] + "/" +
                  a.positionals[2] + " in " + a.positionals[0] + ": occurrence " + scheduled + " (trigger " + id +
                  ")\n");
  return kOk;
}
int cmd_resume(Session& s, const ClientArgs& a) { return cmd_pause_or_resume(s, a, false); }

int cmd_ls(Session& s, const ClientArgs& a) {
  std::string after = a.value("--after").value_or("");
  json all = json::array();
  json last;
  do {
    std::string path = "/v1/volumes/" + percent_encode(a.positionals[0]) + "/entries?after=" + percent_encode(after);
    if (auto p = a.value("--prefix")) path += "&prefix=" + percent_encode(*p);
    if (auto l = a.value("--limit")) path += "&limit=" + percent_encode(*l);
    auto j = s.call("GET", path);
    if (!j) return kRemoteError;
    for (auto& e : (*j)["entries"]) all.push_back(e);
    last = std::move(*j);
    after = last["next"].is_string() ? last["next"].get<std::string>() : std::string();
  } while (a.has("--all") && !after.empty());
  last["entries"] = std::move(all);
  s.print(last, render_entry_list(last));
  return kOk;
}

int cmd_history(Session& s, const ClientArgs& a) {
  std::string path = entry_path(a) + "/history";
  if (auto l = a.value("--limit")) path += "?limit=" + percent_encode(*l);
  auto j = s.call("GET", path);
  if (!j) return kRemoteError;
  s.print(*j, render_history(*j));
  return kOk;
}

int cmd_status(Session& s, const ClientArgs&) {
  auto j = s.call("GET", "/v1/status");
  if (!j) return kRemoteError;
  s.print(*j, render_status(*j));
  return kOk;
}

int cmd_config_get(Session& s, const ClientArgs&) {
  auto j = s.call("GET", "/v1/config");
  if (!j) return kRemoteError;
  s.print(*j, render_config(*j));
  return kOk;
}

int cmd_config_apply(Session& s, const ClientArgs& a) {
  auto text = read_input(a.positionals.at(0));
  if (!text) return s.usage_error(text.error().message);
  auto j = s.call("PUT", a.has("--force") ? "/v1/config?force=true" : "/v1/config", *text);
  if (!j) return kRemoteError;
  s.print(*j, "applied cluster config epoch " + std::to_string(j->value("epoch", 0)) + "\n" + render_config(*j));
  return kOk;
}

using CommandFn = int (*)(Session&, const ClientArgs&);

const std::map<std::string, CommandFn>& command_table() {
  static const std::map<std::string, CommandFn> table = {
      {"put", cmd_put},         {"get", cmd_get},       {"rm", cmd_rm},
      {"pause", cmd_pause},     {"resume", cmd_resume},     {"trigger", cmd_trigger},
      {"history", cmd_history}, {"ls", cmd_ls},         {"status", cmd_status},
      {"config", cmd_config_get}, {"config get", cmd_config_get}, {"config apply", cmd_config_apply}};
  return table;
}


}  // namespace

EnvFn process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

Result<ClientTarget> resolve_client_target(const ClientFlags& flags, const EnvFn& env) {
  std::optional<DaemonConfig> config;
  if (flags.config) {
    auto c = load_config(*flags.config);
    if (!c) return Error(c.error().message);
    config = std::move(*c);
  }
  const bool config_tls = config && !config->api.tls_cert.empty();
  std::string api;
  if (flags.api) {
    api = *flags.api;
  } else if (auto e = env("CAESIUM_API")) {
    api = *e;
  } else if (config) {
    auto hp = parse_host_port(config->api.listen, true);
    if (!hp) return Error(*flags.config + ": api.listen: " + hp.error().message);
    if (hp->port == 0) return Error(*flags.config + ": api.listen has port 0, so that node serves no API");
    if (is_wildcard_host(hp->host)) hp->host = hp->host.find(':') != std::string::npos ? "::1" : "127.0.0.1";
    api = (config_tls ? "https://" : "") + format_host_port(*hp);
  } else {
    return Error("no API address: give --api HOST:PORT, set $CAESIUM_API, or --config NODE.toml");
  }
  if (!daemon::is_header_safe(api)) return Error("the API address contains a control character (CR, LF, ...)");
  ClientTarget t;
  t.base_url = api.find("://") == std::string::npos ? "http://" + api : api;
  while (!t.base_url.empty() && t.base_url.back() == '/') t.base_url.pop_back();
  if (flags.ca_file) {
    t.ca_file = *flags.ca_file;
  } else if (auto e = env("CAESIUM_CA_FILE")) {
    t.ca_file = *e;
  } else if (config) {
    t.ca_file = config->api.tls_ca;
  }
  t.cert_file = flags.cert_file.value_or(config && config->api.tls_verify_client ? config->api.tls_cert : "");
  t.key_file = flags.key_file.value_or(config && config->api.tls_verify_client ? config->api.tls_key : "");
  if (t.cert_file.empty() != t.key_file.empty()) return Error("give --cert-file and --key-file together");
  for (const std::string* f : {&t.ca_file, &t.cert_file, &t.key_file}) {
    if (!f->empty() && !daemon::is_header_safe(*f)) return Error("a file name contains a control character");
  }
  std::optional<std::string> token_file = flags.token_file;
  if (!token_file) {
    if (auto e = env("CAESIUM_TOKEN")) {
      t.token = trim(*e);
      if (!daemon::is_header_safe(t.token)) {
        return Error("$CAESIUM_TOKEN contains a control character (CR, LF, ...): a token must be one line of "
                     "printable characters, or it would end the Authorization header and start another");
      }
      return t;
    }
    if (config && !config->api.token_file.empty()) token_file = config->api.token_file;
  }
  if (token_file) {
    auto token = read_token_file(*token_file);
    if (!token) return token.error();
    t.token = *token;
  }
  return t;
}

ClientTransport curl_transport(const ClientTarget& target, int64_t timeout_ms) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)global;
  return [target, timeout_ms](const std::string& method, const std::string& path, const std::string& body) {
    ClientResponse r;
    CURL* e = curl_easy_init();
    if (e == nullptr) {
      r.error = "libcurl could not make a request handle";
      return r;
    }
    // resolve_client_target refused such tokens already; a transport made otherwise
    // must not put a line break into a header either.
    if (!target.token.empty() && !daemon::is_header_safe(target.token)) {
      curl_easy_cleanup(e);
      r.error = "the API token contains a control character (CR, LF, ...); nothing was sent";
      return r;
    }
    if (!target.idempotency_key.empty() && !daemon::is_header_safe(target.idempotency_key)) {
      curl_easy_cleanup(e);
      r.error = "the idempotency key contains a control character (CR, LF, ...); nothing was sent";
      return r;
    }
    curl_slist* headers = nullptr;
    if (!target.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + target.token).c_str());
    if (!target.idempotency_key.empty()) {
      headers = curl_slist_append(headers, ("Idempotency-Key: " + target.idempotency_key).c_str());
    }
    if (!target.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, target.ca_file.c_str());
    if (!target.cert_file.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, target.cert_file.c_str());
    if (!target.key_file.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, target.key_file.c_str());
    headers = curl_slist_append(headers, "Expect:");
    const std::string url = target.base_url + path;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (method == "GET") {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
      headers = curl_slist_append(headers, "Content-Type: application/json");
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "caesium-cli");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* user) {
      static_cast<std::string*>(user)->append(data, size * n);
      return size * n;
    });
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &r.body);
    char error[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(e);
    if (rc == CURLE_OK) {
      r.connected = true;
      curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
    } else {
      r.error = error[0] != '\0' ? error : curl_easy_strerror(rc);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(e);
    return r;
  };
}

int run_client_command(const std::string& command, const ClientArgs& args, std::ostream& out, std::ostream& err,
                       const EnvFn& env, const ConnectFn& connect, const UsageErrorFn& usage_error) {
  auto it = command_table().find(command);
  assert(it != command_table().end());
  // The parser checked that --timeout is a duration above zero.
  const int64_t timeout_ms = args.value("--timeout") ? parse_duration_ms(*args.value("--timeout")).value() : 30'000;
  ClientFlags flags{args.value("--api"),     args.value("--token-file"), args.value("--config"),
                    args.value("--ca-file"), args.value("--cert-file"),  args.value("--key-file")};
  auto target = resolve_client_target(flags, env);
  if (!target) return usage_error(target.error().message);
  if (auto key = args.value("--idempotency-key")) {
    if (Status st = schedule::validate_idempotency_key(*key); !st.ok()) {
      return usage_error("--idempotency-key: " + st.error().message);
    }
    target->idempotency_key = *key;
  }
  Session s{*target, connect(*target, timeout_ms), out, err, args.has("--json"), usage_error};
  return it->second(s, args);
}

}  // namespace caesium::cli
