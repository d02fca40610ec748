// Human-readable output of the client commands: tables and key/value listings built
// from the API's JSON.  Missing or oddly typed fields render as "-" rather than fail:
// the output is for people, the --json output is for programs.
#include <algorithm>

#include "node/cli/client.h"

namespace caesium::cli {

using nlohmann::json;

namespace {

// A JSON value as table text.
std::string text(const json& j) {
  if (j.is_null()) return "-";
  if (j.is_string()) return j.get<std::string>().empty() ? "-" : j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>() ? "yes" : "no";
  if (j.is_array()) {
    std::string out;
    for (const auto& e : j) out += (out.empty() ? "" : ",") + text(e);
    return out.empty() ? "-" : out;
  }
  return j.dump();
}

std::string field(const json& j, const char* key) {
  if (!j.is_object()) return "-";
  auto it = j.find(key);
  return it == j.end() ? "-" : text(*it);
}

const json& array_at(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

std::string cell(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return s;
}

}  // namespace

std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], cell(r[i]).size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string c = i < r.size() ? cell(r[i]) : std::string();
      out += c;
      if (i + 1 < width.size()) out += std::string(width[i] - c.size() + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string describe_timing(const json& e) {
  if (!e.is_object()) return "-";
  if (e.contains("cron")) return "cron " + field(e, "cron") + " (" + field(e, "tz") + ")";
  auto t = e.find("timer");
  if (t == e.end() || !t->is_object()) return "-";
  if (t->contains("at")) return "at " + field(*t, "at");
  if (t->contains("after")) return "after " + field(*t, "after");
  if (t->contains("interval")) {
    std::string s = "every " + field(*t, "interval");
    if (t->contains("count")) s += " x" + field(*t, "count");
    if (t->contains("repeat_for")) s += " for " + field(*t, "repeat_for");
    return s;
  }
  return "-";
}

// "3 attempts, backoff 1s doubling to 1m, jitter 0.2"; empty unless the entry retries
// (attempts > 1).
std::string describe_retry(const json& e) {
  if (!e.is_object() || !e.contains("retry") || !e["retry"].is_object()) return "";
  const json& r = e["retry"];
  const json attempts = r.value("attempts", json());
  if (!attempts.is_number_integer() || attempts.get<int64_t>() <= 1) return "";
  std::string out = field(r, "attempts") + " attempts, backoff " + field(r, "backoff");
  if (field(r, "max_backoff") != field(r, "backoff")) out += " doubling to " + field(r, "max_backoff");
  const json jitter = r.value("jitter", json());
  if (jitter.is_number() && jitter.get<double>() > 0) out += ", jitter " + field(r, "jitter");
  return out;
}

std::string render_entry(const json& e) {
  std::vector<std::vector<std::string>> rows = {
      {"key", field(e, "key")},
      {"timing", describe_timing(e)},
      {"handler", field(e, "handler")},
      {"semantics", field(e, "semantics")},
      {"next", field(e, "next")},
      {"bind", field(e, "bind") == "-" ? "(any replica)" : field(e, "bind")},
      {"created", field(e, "created") + " by " + field(e, "origin")},
  };
  if (e.is_object() && e.value("paused", false)) rows.push_back({"paused", "yes (caesium resume ... to go on)"});
  if (e.is_object() && e.contains("timeout") && e["timeout"].is_string() && e["timeout"] != "0s") {
    rows.push_back({"timeout", field(e, "timeout")});
  }
  for (const char* k : {"not_before", "not_after"}) {
    if (e.is_object() && e.contains(k) && e[k].is_string()) rows.push_back({k, field(e, k)});
  }
  if (std::string retry = describe_retry(e); !retry.empty()) rows.push_back({"retry", retry});
  if (e.is_object() && e.contains("on_failure") && e["on_failure"].is_string()) {
    rows.push_back({"on_failure", field(e, "on_failure")});
  }
  if (e.is_object() && e.contains("payload")) rows.push_back({"payload", field(e, "payload")});
  if (e.is_object() && e.contains("payload_base64")) rows.push_back({"payload", "(binary, base64) " + field(e, "payload_base64")});
  std::string out;
  for (const auto& r : rows) out += r[0] + std::string(11 - r[0].size(), ' ') + cell(r[1]) + "\n";
  return out;
}

std::string render_entry_list(const json& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : array_at(list, "entries")) {
    rows.push_back({field(e, "entity"), field(e, "name"), describe_timing(e), field(e, "handler"),
                    field(e, "semantics"), field(e, "next")});
  }
  std::string out = render_table({"ENTITY", "NAME", "TIMING", "HANDLER", "SEMANTICS", "NEXT"}, rows);
  if (list.is_object() && list.contains("next") && list["next"].is_string()) {
    out += "(more: --after " + list["next"].get<std::string>() + ", or --all)\n";
  }
  return out;
}

std::string render_history(const json& h) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : array_at(h, "occurrences")) {
    std::string owners, attempts;
    for (const auto& ow : array_at(o, "owners")) {
      owners += (owners.empty() ? "" : ",") + field(ow, "node") + "(" + field(ow, "path") + ")";
    }
    for (const auto& a : array_at(o, "attempts")) {
      attempts += (attempts.empty() ? "" : ", ") + field(a, "worker") + "#" + field(a, "attempt") + ":" + field(a, "state");
    }
    const bool manual = o.is_object() && o.value("manual", false);  // run now (caesium trigger)
    rows.push_back({field(o, "scheduled") + (manual ? " (manual)" : ""), field(o, "outcome"), owners.empty() ? "-" : owners,
                    attempts.empty() ? "-" : attempts, field(o, "runs"), field(o, "retries"), field(o, "duplicates")});
  }
  if (rows.empty()) return "no occurrences recorded yet\n";
  return render_table({"SCHEDULED", "OUTCOME", "OWNER(PATH)", "ATTEMPTS", "RUNS", "RETRIES", "DUPLICATES"}, rows);
}

std::string render_status(const json& s) {
  std::string out = "node " + field(s, "node") + "  config epoch " + field(s, "config_epoch") + "  active " +
                    field(s, "active") + "  running invocations " +
                    field(s.is_object() && s.contains("pending") ? s["pending"] : json(), "running_invocations") + "\n";
  // The verdicts other than a run, since this node started (docs/api.md, status).
  const json sched = s.is_object() && s.contains("scheduler") ? s["scheduler"] : json();
  out += "occurrences decided here: missed " + field(sched, "missed") + "  lost " + field(sched, "lost") + "  skipped " +
         field(sched, "skipped") + "  skipped_overlap " + field(sched, "skipped_overlap") + "\n" +
         "runs here: failed " + field(sched, "failed") + "  timed_out " + field(sched, "timed_out") +
         "  replaced " + field(sched, "replaced") + "  retries decided " + field(sched, "retried") + "\n\n";
  std::vector<std::vector<std::string>> members;
  for (const auto& m : array_at(s, "members")) {
    const json load = m.is_object() && m.contains("load") ? m["load"] : json::object();
    const json cap = m.is_object() && m.contains("capacity") ? m["capacity"] : json::object();
    // Only a positive lower bound says something: the peer's clock is at least this far ahead.
    std::string ahead = "-";
    if (m.is_object() && m.contains("clock_ahead_ms") && m["clock_ahead_ms"].is_number_integer() &&
        m["clock_ahead_ms"].get<int64_t>() > 0) {
      ahead = "+" + std::to_string(m["clock_ahead_ms"].get<int64_t>()) + "ms";
    }
    members.push_back({field(m, "id"), field(m, "state"), field(m, "incarnation"),
                       field(load, "running") + "/" + field(cap, "max_running"),
                       field(cap, "cores") + "c " + field(cap, "memory_mb") + "MB", field(m, "priority"),
                       field(m, "tags"), field(m, "api_addr"), ahead});
  }
  out += render_table({"MEMBER", "STATE", "INCARNATION", "LOAD", "CAPACITY", "PRIORITY", "TAGS", "API", "CLOCK AHEAD"},
                      members);
  std::vector<std::vector<std::string>> volumes;
  for (const auto& v : array_at(s, "volumes")) {
    volumes.push_back({field(v, "name"), field(v, "replicas"), field(v, "master"), field(v, "replica"),
                       field(v, "records"), field(v, "filled")});
  }
  out += "\n" + render_table({"VOLUME", "REPLICAS", "MASTER", "LOCAL", "RECORDS", "FILLED"}, volumes);
  return out;
}

std::string render_config(const json& c) {
  std::string out = "epoch " + field(c, "epoch") + "\n\n";
  std::vector<std::vector<std::string>> nodes;
  for (const auto& n : array_at(c, "nodes")) nodes.push_back({field(n, "id"), field(n, "priority"), field(n, "tags")});
  out += render_table({"NODE", "PRIORITY", "TAGS"}, nodes);
  std::vector<std::vector<std::string>> volumes;
  for (const auto& v : array_at(c, "volumes")) {
    volumes.push_back({field(v, "name"), field(v, "replicas"), field(v, "previous_replicas")});
  }
  out += "\n" + render_table({"VOLUME", "REPLICAS", "PREVIOUS"}, volumes);
  return out;
}

}  // namespace caesium::cli
