// The notification checker (notify_checker.h).
#include "sim/notify_checker.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "node/core/notify.h"
#include "sim/report.h"
#include "sim/world.h"

namespace caesium::sim {
namespace {

using Occ = std::tuple<std::string, std::string, std::string, int64_t>;  // volume, entity, name, scheduled

std::string subject_key(const std::string& volume, const std::string& entity, const std::string& name) {
  return volume + '\n' + schedule::entry_key(entity, name);
}

std::string occ_text(const Occ& o) {
  return std::get<0>(o) + "/" + std::get<1>(o) + "/" + std::get<2>(o) + " @" + std::to_string(std::get<3>(o));
}

bool failed(const Execution& e) {
  return e.outcome == Execution::Outcome::kFailed || e.outcome == Execution::Outcome::kTimedOut;
}

// What a notification's payload says it is about; false when it cannot be read (then it
// is no notification the nodes wrote: counted by nothing).
bool read_notice(const Execution& e, std::string& event, Occ& about) {
  const auto j = nlohmann::json::parse(e.invocation.payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto text = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  auto at = parse_rfc3339_ms(text("scheduled"));
  if (!at.ok()) return false;
  event = text("event");
  about = Occ{text("volume"), text("entity"), text("name"), *at};
  return true;
}

// The failed last runs of the subjects, with the run that failed.
std::map<Occ, const Execution*> last_failures(const NotifyJudgeInput& in) {
  std::map<Occ, const Execution*> out;
  for (const Execution& e : in.executions) {
    const auto& inv = e.invocation;
    if (inv.entity == node::kNotifyEntity || !failed(e)) continue;
    auto s = in.subjects.find(subject_key(inv.volume, inv.entity, inv.entry));
    const uint32_t attempts = s == in.subjects.end() ? 1 : s->second.attempts;
    if (attempts > 1 && inv.run < attempts) continue;
    out.emplace(Occ{inv.volume, inv.entity, inv.entry, inv.scheduled_utc_ms}, &e);
  }
  return out;
}

// Whether a node crashed or restarted at or after from_ms: the failing run's worker (its
// notice may have died with it), or any other (the notification's own run, at most once,
// may have been dispatched to it and be lost).
bool crash_after(const std::vector<FaultRecord>& faults, int64_t from_ms) {
  return std::any_of(faults.begin(), faults.end(), [&](const FaultRecord& f) {
    return f.time_ms >= from_ms && (f.kind == FaultKind::kCrash || f.kind == FaultKind::kRestart);
  });
}

}  // namespace

std::vector<Violation> judge_notifications(const NotifyJudgeInput& in) {
  std::vector<Violation> out;
  // notify.once, and what each notification was about.
  std::map<std::pair<std::string, std::string>, std::vector<const Execution*>> by_entry;
  std::set<std::pair<std::string, Occ>> told;  // (event, occurrence)
  for (const Execution& e : in.executions) {
    if (e.invocation.entity != node::kNotifyEntity) continue;
    by_entry[{e.invocation.volume, e.invocation.entry}].push_back(&e);
    std::string event;
    Occ about;
    if (read_notice(e, event, about)) told.emplace(event, about);
  }
  for (const auto& [key, runs] : by_entry) {
    const bool withheld = key.second.rfind("withheld-", 0) == 0;
    const size_t counted = withheld ? static_cast<size_t>(std::count_if(runs.begin(), runs.end(), [](const Execution* e) {
                                        return !e->invocation.possible_duplicate;
                                      }))
                                    : runs.size();
    if (counted > 1) {
      out.push_back(Violation{"notify.once",
                              "notification " + key.first + "/" + key.second + " ran " + std::to_string(counted) +
                                  " times" + (withheld ? " unflagged" : ""),
                              runs[1]->start_ms, ""});
    }
  }
  const auto failures = last_failures(in);
  // notify.spurious
  for (const auto& [event, about] : told) {
    if (event != "on_failure" && event != "failed") continue;
    auto s = in.subjects.find(subject_key(std::get<0>(about), std::get<1>(about), std::get<2>(about)));
    if (s == in.subjects.end() || !s->second.judged || failures.count(about) > 0) continue;
    out.push_back(Violation{"notify.spurious", event + " notification of " + occ_text(about) +
                                                   ", whose last run did not fail", -1, ""});
  }
  // notify.sent
  int64_t last_fault_ms = 0;
  for (const FaultRecord& f : in.faults) last_fault_ms = std::max(last_fault_ms, f.time_ms);
  if (in.end_ms - last_fault_ms < in.settle_ms) return out;
  for (const auto& [occ, e] : failures) {
    auto s = in.subjects.find(subject_key(std::get<0>(occ), std::get<1>(occ), std::get<2>(occ)));
    if (s == in.subjects.end() || !s->second.judged) continue;
    if (e->done_ms < 0 || e->done_ms > in.end_ms - in.settle_ms || crash_after(in.faults, e->start_ms)) continue;
    std::vector<std::string> due;
    if (!s->second.on_failure.empty()) due.push_back("on_failure");
    if (!in.notify_handler.empty() && in.notify_failed) due.push_back("failed");
    for (const std::string& event : due) {
      if (told.count({event, occ}) > 0) continue;
      out.push_back(Violation{"notify.sent", "the last run of " + occ_text(occ) + " failed at " +
                                                 std::to_string(e->done_ms) + " ms and no " + event +
                                                 " notification of it ran",
                              e->done_ms, ""});
    }
  }
  return out;
}

NotifyChecker::NotifyChecker(const Scenario& scenario, std::string notify_handler, bool notify_failed) {
  in_.notify_handler = std::move(notify_handler);
  in_.notify_failed = notify_failed;
  for (const WorkloadEntry& w : scenario.workload) {
    if (w.remove || w.pause || w.trigger) {
      auto it = in_.subjects.find(subject_key(w.volume, w.entity, w.name));
      if (it != in_.subjects.end() && (w.remove || w.pause)) it->second.judged = false;
      continue;
    }
    const std::string key = subject_key(w.volume, w.entity, w.name);
    NotifySubject s;
    if (w.fields.contains("on_failure") && w.fields["on_failure"].is_string()) {
      s.on_failure = w.fields["on_failure"].get<std::string>();
    }
    if (w.fields.contains("retry") && w.fields["retry"].is_object() && w.fields["retry"].contains("attempts") &&
        w.fields["retry"]["attempts"].is_number_integer()) {  // signed or not, as the TOML or the generator made it
      s.attempts = static_cast<uint32_t>(std::clamp<int64_t>(w.fields["retry"]["attempts"].get<int64_t>(), 1, 100));
    }
    auto [it, fresh] = in_.subjects.emplace(key, s);
    if (!fresh) it->second.judged = false;  // an edit
  }
}

void NotifyChecker::on_execution(const World& world, const Execution& execution) { (void)world, (void)execution; }

void NotifyChecker::on_fault(const World& world, const FaultRecord& fault) {
  (void)world;
  in_.faults.push_back(fault);
}

void NotifyChecker::finish(const World& world, Report& report) {
  in_.executions = world.executions();
  in_.end_ms = world.now_ms();
  size_t notifications = 0;
  for (const Execution& e : in_.executions) notifications += e.invocation.entity == node::kNotifyEntity ? 1 : 0;
  report.set("notify.executions", static_cast<double>(notifications));
  for (Violation& v : judge_notifications(in_)) report.violate(std::move(v));
}

}  // namespace caesium::sim
