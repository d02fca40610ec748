// The client commands: arguments, target resolution, the libcurl transport, and one
// function per command.  Rendering: client_render.cpp.
#include "node/cli/client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/base64.h"
#include "node/daemon/api/api.h"
#include "node/daemon/config/config.h"
#include "node/daemon/net/net_addr.h"
#include "schedule/entry_json.h"

namespace caesium::daemon {

using nlohmann::json;

namespace {

constexpr int kOk = 0, kRemoteError = 1, kUsage = 2;

// --- arguments --------------------------------------------------------------------------

struct Spec {
  std::vector<std::string> positionals;  // names, for messages
  std::set<std::string> values;          // flags taking a value (--x V or --x=V)
  std::set<std::string> bools;           // flags without a value
  std::set<std::string> repeatable;      // value flags that may repeat
  bool optional_last = false;            // the last positional may be missing
};

struct Args {
  std::vector<std::string> positionals;
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> bools;

  std::optional<std::string> value(const std::string& flag) const {
    auto it = values.find(flag);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  bool has(const std::string& flag) const { return bools.count(flag) > 0; }
};

const std::set<std::string> kCommonValues = {"--api", "--token-file", "--config", "--timeout"};

Result<Args> parse_args(const std::vector<std::string>& words, const Spec& spec) {
  Args a;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w.rfind("--", 0) != 0 || w == "--") {
      a.positionals.push_back(w);
      continue;
    }
    std::string flag = w;
    std::optional<std::string> inline_value;
    if (const size_t eq = w.find('='); eq != std::string::npos) {
      flag = w.substr(0, eq);
      inline_value = w.substr(eq + 1);
    }
    if (flag == "--json" || spec.bools.count(flag) > 0) {
      if (inline_value) return Error(flag + " takes no value");
      a.bools.insert(flag);
      continue;
    }
    if (kCommonValues.count(flag) == 0 && spec.values.count(flag) == 0) return Error("unknown option " + flag);
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < words.size()) {
      value = words[++i];
    } else {
      return Error(flag + " needs a value");
    }
    auto& list = a.values[flag];
    if (!list.empty() && spec.repeatable.count(flag) == 0) return Error(flag + " is given twice");
    list.push_back(std::move(value));
  }
  const size_t want = spec.positionals.size();
  const size_t min = spec.optional_last && want > 0 ? want - 1 : want;
  if (a.positionals.size() < min) return Error("missing " + spec.positionals[a.positionals.size()]);
  if (a.positionals.size() > want) return Error("unexpected argument '" + a.positionals[want] + "'");
  return a;
}

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

std::string entry_path(const Args& a) {
  return "/v1/volumes/" + percent_encode(a.positionals[0]) + "/entities/" + percent_encode(a.positionals[1]) +
         "/schedule/" + percent_encode(a.positionals[2]);
}

std::string with_w(const std::string& path, const Args& a) {
  auto w = a.value("--w");
  return w ? path + "?w=" + percent_encode(*w) : path;
}

// The entry document from --file / --data, or built from field flags.
Result<std::string> entry_body(const Args& a) {
  const bool from_doc = a.value("--file") || a.value("--data");
  static const std::vector<std::string> kFields = {
      "--cron", "--tz", "--jitter", "--at", "--after", "--interval", "--repeat-for", "--count", "--handler",
      "--semantics", "--misfire", "--misfire-window", "--accept-timeout", "--complete-time", "--payload",
      "--payload-file", "--bind"};
  bool any_field = a.has("--prefer-origin");
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
      if (c->empty() || c->find_first_not_of("0123456789") != std::string::npos || c->size() > 10) {
        return Error("--count must be a whole number");
      }
      t["count"] = std::stoull(*c);
    }
    if (auto jt = a.value("--jitter")) t["jitter"] = *jt;
    j["timer"] = std::move(t);
  } else if (auto jt = a.value("--jitter")) {
    j["jitter"] = *jt;
  }
  for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
           {"--handler", "handler"}, {"--semantics", "semantics"}, {"--misfire", "misfire"},
           {"--misfire-window", "misfire_window"}, {"--accept-timeout", "accept_timeout"},
           {"--complete-time", "complete_time"}, {"--payload", "payload"}}) {
    if (auto v = a.value(flag)) j[key] = *v;
  }
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
  return j.dump();
}

// --- the commands ---------------------------------------------------------------------------

int cmd_put(Session& s, const Args& a) {
  auto body = entry_body(a);
  if (!body) {
    s.err << "caesium put: " << body.error().message << "\n";
    return kUsage;
  }
  auto j = s.call("PUT", with_w(entry_path(a), a), *body);
  if (!j) return kRemoteError;
  s.print(*j, render_entry(*j));
  return kOk;
}

int cmd_get(Session& s, const Args& a) {
  auto j = s.call("GET", entry_path(a));
  if (!j) return kRemoteError;
  s.print(*j, render_entry(*j));
  return kOk;
}

int cmd_rm(Session& s, const Args& a) {
  if (!s.call("DELETE", with_w(entry_path(a), a))) return kRemoteError;
  if (!s.json_out) s.out << "deleted " << a.positionals[1] << "/" << a.positionals[2] << " from " << a.positionals[0] << "\n";
  return kOk;
}

int cmd_ls(Session& s, const Args& a) {
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

int cmd_history(Session& s, const Args& a) {
  std::string path = entry_path(a) + "/history";
  if (auto l = a.value("--limit")) path += "?limit=" + percent_encode(*l);
  auto j = s.call("GET", path);
  if (!j) return kRemoteError;
  s.print(*j, render_history(*j));
  return kOk;
}

int cmd_status(Session& s, const Args&) {
  auto j = s.call("GET", "/v1/status");
  if (!j) return kRemoteError;
  s.print(*j, render_status(*j));
  return kOk;
}

int cmd_config(Session& s, const Args& a) {
  const std::string verb = a.positionals.empty() ? "get" : a.positionals[0];
  if (verb == "get") {
    if (a.positionals.size() > 1) {
      s.err << "caesium config: 'get' takes no file\n";
      return kUsage;
    }
    auto j = s.call("GET", "/v1/config");
    if (!j) return kRemoteError;
    s.print(*j, render_config(*j));
    return kOk;
  }
  if (verb != "apply" || a.positionals.size() != 2) {
    s.err << "caesium config: expected 'get' or 'apply FILE'\n";
    return kUsage;
  }
  auto text = read_input(a.positionals[1]);
  if (!text) {
    s.err << "caesium config: " << text.error().message << "\n";
    return kUsage;
  }
  auto j = s.call("PUT", a.has("--force") ? "/v1/config?force=true" : "/v1/config", *text);
  if (!j) return kRemoteError;
  s.print(*j, "applied cluster config epoch " + std::to_string(j->value("epoch", 0)) + "\n" + render_config(*j));
  return kOk;
}

struct Command {
  std::string usage;
  Spec spec;
  int (*run)(Session&, const Args&);
};

const std::map<std::string, Command>& command_table() {
  static const Spec entry{{"VOLUME", "ENTITY", "NAME"}, {}, {}, {}, false};
  static const std::map<std::string, Command> table = [] {
    std::map<std::string, Command> t;
    Spec put = entry;
    put.values = {"--file", "--data", "--cron", "--tz", "--jitter", "--at", "--after", "--interval", "--repeat-for",
                  "--count", "--handler", "--semantics", "--misfire", "--misfire-window", "--accept-timeout",
                  "--complete-time", "--payload", "--payload-file", "--bind", "--w"};
    put.bools = {"--prefer-origin"};
    put.repeatable = {"--bind"};
    t["put"] = {"put VOLUME ENTITY NAME (--file F | --data JSON | --cron EXPR | --interval D ...) --handler H [--w N]",
                put, cmd_put};
    t["get"] = {"get VOLUME ENTITY NAME", entry, cmd_get};
    Spec rm = entry;
    rm.values = {"--w"};
    t["rm"] = {"rm VOLUME ENTITY NAME [--w N]", rm, cmd_rm};
    Spec hist = entry;
    hist.values = {"--limit"};
    t["history"] = {"history VOLUME ENTITY NAME [--limit N]", hist, cmd_history};
    t["ls"] = {"ls VOLUME [--prefix ENTITY-PREFIX] [--limit N] [--after KEY] [--all]",
               Spec{{"VOLUME"}, {"--prefix", "--limit", "--after"}, {"--all"}, {}, false}, cmd_ls};
    t["status"] = {"status", Spec{}, cmd_status};
    t["config"] = {"config [get | apply FILE [--force]]", Spec{{"get|apply", "FILE"}, {}, {"--force"}, {}, true}, cmd_config};
    return t;
  }();
  return table;
}

Result<int64_t> timeout_of(const Args& a) {
  auto t = a.value("--timeout");
  if (!t) return int64_t{30'000};
  auto ms = parse_duration_ms(*t);
  if (!ms || *ms <= 0) return Error("--timeout must be a duration such as 10s");
  return *ms;
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
    api = format_host_port(*hp);
  } else {
    return Error("no API address: give --api HOST:PORT, set $CAESIUM_API, or --config NODE.toml");
  }
  ClientTarget t;
  t.base_url = api.find("://") == std::string::npos ? "http://" + api : api;
  while (!t.base_url.empty() && t.base_url.back() == '/') t.base_url.pop_back();
  std::optional<std::string> token_file = flags.token_file;
  if (!token_file) {
    if (auto e = env("CAESIUM_TOKEN")) {
      t.token = trim(*e);
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
    curl_slist* headers = nullptr;
    if (!target.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + target.token).c_str());
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

const std::vector<std::pair<std::string, std::string>>& client_command_usages() {
  static const std::vector<std::pair<std::string, std::string>> usages = [] {
    std::vector<std::pair<std::string, std::string>> u;
    for (const auto& [name, c] : command_table()) u.emplace_back(name, c.usage);
    return u;
  }();
  return usages;
}

int run_client_command(const std::string& command, const std::vector<std::string>& words, std::ostream& out,
                       std::ostream& err, const EnvFn& env, const ConnectFn& connect) {
  auto it = command_table().find(command);
  if (it == command_table().end()) {
    err << "caesium: '" << command << "' is not a client command\n";
    return kUsage;
  }
  const Command& c = it->second;
  for (const auto& w : words) {
    if (w == "--help" || w == "-h") {
      out << "usage: caesium " << c.usage
          << "\n  common options: --api HOST:PORT  --token-file FILE  --config NODE.toml  --json  --timeout 30s\n";
      return kOk;
    }
  }
  auto args = parse_args(words, c.spec);
  if (!args) {
    err << "caesium " << command << ": " << args.error().message << "\nusage: caesium " << c.usage << "\n";
    return kUsage;
  }
  auto timeout = timeout_of(*args);
  if (!timeout) {
    err << "caesium " << command << ": " << timeout.error().message << "\n";
    return kUsage;
  }
  ClientFlags flags{args->value("--api"), args->value("--token-file"), args->value("--config")};
  auto target = resolve_client_target(flags, env);
  if (!target) {
    err << "caesium " << command << ": " << target.error().message << "\n";
    return kUsage;
  }
  Session s{*target, connect(*target, *timeout), out, err, args->has("--json")};
  return c.run(s, *args);
}

}  // namespace caesium::daemon
