#include "sim/fire_checker.h"

#include <algorithm>
#include <tuple>

#include "base/time.h"
#include "node/core/notify.h"
#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"
#include "schedule/occurrence.h"
#include "schedule/timing.h"
#include "sim/report.h"
#include "sim/world.h"
#include "sim/write_checker.h"

namespace caesium::sim {
namespace {

std::string occ_name(const std::string& volume, const std::string& key, int64_t scheduled_utc_ms) {
  return volume + "/" + key + "@" + format_rfc3339_utc(scheduled_utc_ms);
}

// overlap = forbid or replace: one run of the entry at a time (replace stops the earlier
// run first; at-most-once waits for its end).
bool one_run_at_a_time(const schedule::Entry& e) {
  return e.overlap == schedule::OverlapPolicy::forbid || e.overlap == schedule::OverlapPolicy::replace;
}

}  // namespace

FireChecker::FireChecker(const Scenario& scenario, Options options) : scenario_(scenario), options_(options) {
  for (size_t i = 0; i < scenario_.workload.size(); ++i) {
    const auto& e = scenario_.workload[i];
    workload_by_key_[e.volume + '\n' + schedule::entry_key(e.entity, e.name)] = i;  // the last write wins
  }
}

void FireChecker::on_start(const World& world) { (void)world; }

void FireChecker::on_fault(const World& world, const FaultRecord& fault) {
  (void)world;
  faults_.push_back(fault);
  if (fault.kind == FaultKind::kSkew) {
    for (uint32_t n : fault.nodes) skewed_nodes_.insert(n);
  }
}

void FireChecker::on_observation(const World& world, uint32_t node, const Observation& obs) {
  if (obs.kind == Observation::Kind::kEntry) {
    // The node accepted an API write: the entry's clock starts at the node's time.  Every
    // write of a key is a version of it (an edit replaces, a delete ends it).
    const WorkloadEntry* w = nullptr;
    if (obs.write_id >= 1 && obs.write_id <= world.writes().size()) {
      w = &scenario_.workload[world.writes()[obs.write_id - 1].workload];
    } else if (auto found = workload_by_key_.find(obs.volume + '\n' + obs.key); found != workload_by_key_.end()) {
      w = &scenario_.workload[found->second];
    }
    if (w == nullptr) return;
    Created c;
    c.volume = obs.volume;
    c.key = obs.key;
    c.via = world.spec(node).id;
    c.at_ms = world.now_ms();
    c.at_utc_ms = obs.at_utc_ms;
    c.write_id = obs.write_id;
    c.deleted = obs.text == "delete";
    c.version = obs.version;
    // In last-writer-wins order: a write issued later with a lower version (its node's
    // clock behind) never replaces one issued earlier with a higher version.
    auto& versions = created_[{c.volume, c.key}];
    const auto at = std::upper_bound(versions.begin(), versions.end(), c.version,
                                     [](const schedule::Version& v, const Created& x) { return v < x.version; });
    if (obs.text == "trigger" || obs.text == "trigger-repeat") {
      // Run now: one Idempotency-Key (or made-up id) names one manual occurrence, however
      // often the trigger is retried.  A retry that found its trigger wrote nothing.
      // Keyed by the request's Idempotency-Key (the workload's, not the node's id for it),
      // so a node that ignored the key would be caught.
      const std::string name = w->idempotency_key.empty() ? "id " + obs.subject : "key " + w->idempotency_key;
      trigger_instants_[{c.volume, c.key, name}].insert(obs.scheduled_utc_ms);
      if (obs.text == "trigger-repeat") return;
      auto entry = schedule::decode_entry(obs.detail);
      if (!entry) return;
      c.entry = std::move(*entry);
    } else if (obs.text == "pause" || obs.text == "resume") {
      // The definition the node wrote: its stored one, paused or not, its creation instant
      // kept (swarm --triggers seed 86: a pause through a node the delete before it in
      // version order had not reached recreated the entry).
      auto entry = schedule::decode_entry(obs.detail);
      if (!entry) return;  // the node refused it too
      c.entry = std::move(*entry);
    } else if (!c.deleted) {
      auto entry = schedule::entry_from_json(w->fields, w->entity, w->name, obs.at_utc_ms, world.spec(node).id);
      if (!entry) return;  // the node refused it too
      c.entry = std::move(*entry);
    }
    versions.insert(at, std::move(c));
    return;
  }
  if (obs.kind == Observation::Kind::kMaster) {
    auto& set = self_masters_[obs.volume];
    if (obs.subject == world.spec(node).id) set.insert(node);
    else set.erase(node);
    // A node that crashed still "believes" until it restarts; count only up nodes.
    size_t up = 0;
    for (uint32_t n : set) up += world.is_up(n) ? 1 : 0;
    max_concurrent_masters_ = std::max(max_concurrent_masters_, up);
    return;
  }
  if (obs.kind != Observation::Kind::kFire) return;
  Decisions& d = decisions_[OccKey{obs.volume, obs.key, obs.scheduled_utc_ms}];
  if ((obs.text == "dispatched" || obs.text == "redispatched") && !obs.subject.empty()) {
    d.workers.insert(obs.subject);
    if (d.first_dispatch_ms < 0) d.first_dispatch_ms = world.now_ms();
    d.last_dispatch_ms = world.now_ms();
  }
  // A granted claim carries its first attempt: the claimant may dispatch it to that worker
  // the moment it holds a quorum, so that worker counts as one the occurrence went to.
  if (obs.text == "granted" && !obs.detail.empty()) d.workers.insert(obs.detail);
  if (obs.text == "withheld") d.withheld = true;
  else if (obs.text == "lost") {
    d.lost = true;
    if (d.lost_ms < 0) d.lost_ms = world.now_ms();
  }
  else if (obs.text == "missed" || obs.text == "skipped") d.missed = true;
  else if (obs.text == "skipped_overlap") d.skipped_overlap = true;
}

void FireChecker::on_execution(const World& world, const Execution& execution) {
  const auto& inv = execution.invocation;
  if (inv.entity == node::kNotifyEntity) return;  // notifications: the notify rules (notify_checker.h)
  OccKey k{inv.volume, schedule::entry_key(inv.entity, inv.entry), inv.scheduled_utc_ms};
  executions_[k].push_back(world.executions().size() - 1);
}

namespace {

// `from`, the time of every change of the volume's sets in (from, to], and `to`: one
// instant in each config in force over [from, to].
std::vector<int64_t> config_times(const World& world, const std::string& volume, int64_t from, int64_t to) {
  std::vector<int64_t> out{from};
  for (const World::ConfigChange& change : world.config_changes()) {
    if (change.volume == volume && change.at_ms > from && change.at_ms <= to) out.push_back(change.at_ms);
  }
  out.push_back(to);
  return out;
}

}  // namespace

// A later write may take o away before the liveness rule could require it to have run
// (docs/firing.md, Deletes and edits): an acknowledged delete stops every run not yet
// dispatched, however soon after the due time it comes (a master whose clock lags within
// the skew bound decides that much late, and faults around the group delay it more); an
// edit governs the occurrences due at or after its version time — the clock of the node
// that took it, not ground truth — that its definition no longer schedules; a pause, as a
// delete.  Any, issued before the end of o's liveness window, leaves o's liveness unjudged.
bool FireChecker::taken_away_by_later_write(const std::vector<Created>& versions, size_t version,
                                            int64_t scheduled_utc_ms, int64_t fire_utc_ms, int64_t until_ms) {
  for (size_t later = version + 1; later < versions.size(); ++later) {
    const Created& w = versions[later];
    if (w.at_ms >= until_ms) continue;
    // A pause stops what was not dispatched, as a delete does (docs/entries.md, Pause and
    // resume): an occurrence due before it and still undecided is skipped, and the resume
    // judges only what fell due while paused (swarm --triggers seed 989).
    if (w.deleted || w.entry.paused) return true;
    if (fire_utc_ms >= w.version.physical_ms && !schedules(w.entry, scheduled_utc_ms)) return true;
  }
  return false;
}

std::vector<std::string> FireChecker::eligible(const World& world, const Created& c, int64_t time_ms) const {
  return eligible_among(world, c, world.replicas_at(c.volume, time_ms));
}

std::vector<std::string> FireChecker::eligible_previous(const World& world, const Created& c, int64_t time_ms) const {
  return eligible_among(world, c, world.previous_replicas_at(c.volume, time_ms));
}

std::vector<std::string> FireChecker::eligible_among(const World& world, const Created& c,
                                                     const std::vector<std::string>& replicas) const {
  return eligible_replicas(world, c.entry, replicas);
}

// An acknowledged entry must survive every replica change: at the end, with every replica
// of the final config up, at least one of them holds it.  (Acknowledged: its writer stayed
// up for a moment after the write, so the write was durable and replied to.)  Unless
// every one of them lost its disk after the write (restarted wiped): then no copy need
// survive (swarm seed 7904 with --reconfig: both replicas of a two-replica volume wiped
// 82 ms apart).
bool FireChecker::entry_lost(const World& world, const Created& c) const {
  const int64_t via = world.index_of(c.via);
  if (via < 0 || !world.healthy_throughout(static_cast<uint32_t>(via), c.at_ms, c.at_ms + 2'000)) return false;
  const int64_t end_ms = world.now_ms();
  std::vector<std::string> holders = world.replicas_at(c.volume, end_ms);
  const auto& previous = world.previous_replicas_at(c.volume, end_ms);
  holders.insert(holders.end(), previous.begin(), previous.end());
  bool answered = false, every_holder_wiped = true;
  for (const auto& r : holders) {
    const int64_t idx = world.index_of(r);
    if (idx < 0 || !world.is_up(static_cast<uint32_t>(idx))) return false;
    const Process* p = world.process(static_cast<uint32_t>(idx));
    const std::optional<bool> held = p != nullptr ? p->holds_record(c.volume, c.key) : std::nullopt;
    if (held && *held) return false;
    answered = answered || held.has_value();
    bool wiped = false;
    for (const FaultRecord& f : faults_) {
      wiped = wiped || (f.kind == FaultKind::kRestart && f.detail == "wipe" && f.time_ms > c.at_ms &&
                        std::find(f.nodes.begin(), f.nodes.end(), static_cast<uint32_t>(idx)) != f.nodes.end());
    }
    every_holder_wiped = every_holder_wiped && wiped;
  }
  return answered && !every_holder_wiped;
}

// Ground truth, not the fault log: every eligible replica up and not slow, every pair
// linked both ways, and no clock skew, throughout [from_ms, to_ms].
bool FireChecker::quiet_between(const World& world, const std::vector<std::string>& replicas, int64_t from_ms,
                                int64_t to_ms) const {
  std::vector<uint32_t> idx;
  for (const auto& r : replicas) {
    const int64_t i = world.index_of(r);
    if (i < 0) return false;
    idx.push_back(static_cast<uint32_t>(i));
  }
  for (size_t a = 0; a < idx.size(); ++a) {
    if (skewed_nodes_.count(idx[a]) || !world.healthy_throughout(idx[a], from_ms, to_ms)) return false;
    for (size_t b = a + 1; b < idx.size(); ++b) {
      if (!world.healthy_pair_throughout(idx[a], idx[b], from_ms, to_ms)) return false;
    }
  }
  return true;
}

void FireChecker::finish(const World& world, Report& report) {
  const int64_t end_ms = world.now_ms();
  const int64_t epoch = scenario_.world.epoch_utc_ms;
  const bool fault_free = faults_.empty() && scenario_.world.network.loss == 0 && scenario_.world.network.corrupt == 0;
  const auto& execs = world.executions();

  size_t triggers = 0;
  for (const auto& [id, instants] : trigger_instants_) {
    ++triggers;
    if (instants.size() < 2) continue;
    const auto& [volume, key, trigger] = id;
    report.violate({"trigger.key", volume + "/" + key + " trigger " + trigger + " was answered with " +
                                       std::to_string(instants.size()) + " different occurrences (first " +
                                       format_rfc3339_utc(*instants.begin()) + ", last " +
                                       format_rfc3339_utc(*instants.rbegin()) + ")",
                    end_ms, {}});
  }
  report.set("triggers", static_cast<double>(triggers));

  struct Tally {
    uint64_t due = 0, once = 0, duplicates = 0, withheld = 0, missed = 0, lost = 0, executions = 0;
  } tally[2];  // [0] at-least-once, [1] at-most-once
  std::vector<int64_t> lateness_all, lateness_healthy, lateness_faulty;
  std::set<OccKey> expected;

  // When occurrence k was first dispatched; `fallback` (its first run) when no node
  // reported a dispatch.
  auto d_first_dispatch = [&](const OccKey& k, int64_t fallback) {
    auto found = decisions_.find(k);
    if (found == decisions_.end() || found->second.first_dispatch_ms < 0) return fallback;
    return std::min(found->second.first_dispatch_ms, fallback);
  };
  for (const auto& [ck, versions] : created_) {
    for (size_t version = 0; version < versions.size(); ++version) {
      const Created& c = versions[version];
      if (c.deleted) continue;
      const bool amo = c.entry.semantics == schedule::Semantics::at_most_once;
      Tally& t = tally[amo ? 1 : 0];
      if (version + 1 == versions.size() && entry_lost(world, c)) {
        report.violate({"entry.lost", c.volume + "/" + c.key + " is held by no replica of the volume at the end", end_ms, {}});
      }
      // This version schedules until the next write of its key was issued (an occurrence of
      // it due later is the next version's business, or nobody's after a delete), and
      // liveness holds only for what is due once the write was acknowledged: before, either
      // outcome is fine (a write that never was acknowledged may or may not take effect).
      int64_t next_issue_ms = kNever;  // the first of the higher versions to be issued
      for (size_t later = version + 1; later < versions.size(); ++later) {
        next_issue_ms = std::min(next_issue_ms, versions[later].at_ms);
      }
      const int64_t acked_ms = c.write_id >= 1 && c.write_id <= world.writes().size()
                                   ? world.writes()[c.write_id - 1].acked_ms
                                   : c.at_ms;
      int64_t cursor = c.at_utc_ms - 1;
      for (size_t n = 0; n < options_.max_occurrences_per_entry; ++n) {
        auto next = schedule::next_occurrence(c.entry, cursor);
        if (!next) break;
        cursor = *next;
        const int64_t fire_utc = schedule::fire_time(c.entry, *next);
        const int64_t due_ms = fire_utc - epoch;  // the true instant the occurrence is due
        // Occurrences too close to the end of the run have not had their chance yet.
        if (due_ms > end_ms - 2 * options_.detection_bound_ms) break;
        if (due_ms >= next_issue_ms) break;
        const bool unacked = acked_ms < 0 || due_ms < acked_ms;
        const OccKey k{c.volume, c.key, *next};
        expected.insert(k);
        const std::vector<std::string> elig = eligible(world, c, due_ms);
        // Liveness is judged only for an acknowledged version, under a settled replica set
        // (Options::reconfig_settle_ms), and not while a change is in flight (previous
        // replicas listed).
        const bool judged =
            !unacked && !world.config_changed_between(c.volume, std::min(c.at_ms, due_ms - options_.reconfig_settle_ms),
                                          due_ms + options_.liveness_window_ms) &&
            world.previous_replicas_at(c.volume, due_ms).empty();
        ++t.due;
        const std::string name = occ_name(c.volume, c.key, *next);
        size_t started = 0, counted = 0;
        int64_t first_start = -1;
        auto it = executions_.find(k);
        if (it != executions_.end()) {
          for (size_t idx : it->second) {
            const Execution& e = execs[idx];
            ++started;
            if (e.outcome != Execution::Outcome::kAbandoned) ++counted;
            if (first_start < 0 || e.start_ms < first_start) first_start = e.start_ms;
            // Never early.  A quorum cannot agree early unless a majority of the eligible
            // clocks run ahead; a degraded fire may be early by its own node's skew.  The
            // grants come from the sets of the claimant's config, which may be older than
            // the one in force at the due instant, so every set in force from a while
            // before the start to the due instant counts (swarm --reconfig seed 2927: n3
            // and n4, both ahead, granted in [n1,n3,n4] a second early; n4 was removed
            // before the due instant, and [n1,n3] alone has no skewed majority).
            bool any_skewed = false, quorum_could_skew = false;
            for (const int64_t at : config_times(world, c.volume, e.start_ms - options_.reconfig_settle_ms, due_ms)) {
              for (const auto& set : {eligible(world, c, at), eligible_previous(world, c, at)}) {
                size_t skewed = 0;
                for (const auto& r : set) {
                  const int64_t idx_r = world.index_of(r);
                  if (idx_r >= 0 && skewed_nodes_.count(static_cast<uint32_t>(idx_r))) ++skewed;
                }
                any_skewed = any_skewed || skewed > 0;
                quorum_could_skew = quorum_could_skew || skewed * 2 > set.size();
              }
            }
            // A degraded or takeover fire is decided by one node alone: early by its skew.
            const int64_t allowance =
                (e.invocation.possible_duplicate && any_skewed) || quorum_could_skew ? world.max_skew_ms() : 0;
            if (e.start_ms < due_ms - allowance) {
              report.violate({"early", name + " started " + std::to_string(due_ms - e.start_ms) + " ms before it was due (fire id " +
                                           e.invocation.fire_id + ")",
                              e.start_ms, world.spec(e.node).id});
            }
          }
        }
        t.executions += started;
        {
          auto parsed = schedule::parse_entry_key(c.key);
          const std::string prefix = "entry." + (parsed.ok() ? parsed->entity + "/" + parsed->name : c.key);
          report.add(prefix + ".due", 1);
          report.add(prefix + ".executions", static_cast<double>(started));
        }
        if (started == 1) ++t.once;
        if (started > 1) t.duplicates += started - 1;
        const Decisions d = decisions_.count(k) ? decisions_.at(k) : Decisions{};
        if (d.withheld) ++t.withheld;
        if (d.lost) ++t.lost;
        if (started == 0) ++t.missed;
        // overlap = forbid: an occurrence skipped because a run of its entry was (as far as
        // the deciders knew) still running is not owed a run; overlap.forbid checks the
        // runs themselves.
        // (At-least-once: some node's skipped_overlap verdict may stand beside a run of
        // another that then died with its node — best effort, and no takeover follows.)
        // overlap = replace: an occurrence replaced before it ran is skipped_overlap too.
        const bool overlap_skipped =
            one_run_at_a_time(c.entry) && (d.skipped_overlap || (amo && overlap_blocked(world, k, due_ms)));

        if (first_start >= 0) {
          const int64_t late = first_start - due_ms;
          lateness_all.push_back(late);
          const bool quiet = quiet_between(world, elig, std::max<int64_t>(0, due_ms - options_.liveness_before_ms), first_start);
          (quiet ? lateness_healthy : lateness_faulty).push_back(late);
          // A forbid occurrence may wait for the news that the run before it ended.
          const bool waited_for_overlap = one_run_at_a_time(c.entry) && amo && overlap_blocked(world, k, due_ms);
          // With a running cap, waiting for a free slot is lateness by design (cap.exceeded
          // and the liveness rules judge those runs instead).
          if (quiet && judged && late > options_.healthy_lateness_ms && due_ms - c.at_ms > options_.replication_grace_ms &&
              !waited_for_overlap && options_.running_cap == 0) {
            report.violate({"lateness.healthy", name + " ran " + std::to_string(late) + " ms late with no fault around it",
                            first_start, {}});
          }
        }

        // The misfire policy "skip": an occurrence that nobody fired within the threshold is
        // not run at all.  Judged on the first dispatch (the firing decision's visible
        // effect), so a redispatch of an attempt first dispatched in time is no misfire.
        if (started > 0 && c.entry.misfire == schedule::MisfirePolicy::skip) {
          const int64_t dispatched = d_first_dispatch(k, first_start);
          const int64_t allowance = options_.misfire_slack_ms + (skewed_nodes_.empty() ? 0 : world.max_skew_ms());
          if (dispatched - due_ms > options_.misfire_threshold_ms + allowance) {
            report.violate({"misfire.skip_late", name + " (misfire = skip) was first dispatched " +
                                                     format_duration_ms(dispatched - due_ms) +
                                                     " after it was due (misfire_threshold " +
                                                     format_duration_ms(options_.misfire_threshold_ms) + ") and ran " +
                                                     std::to_string(started) + " time(s)",
                            dispatched, {}});
          }
        }

        const bool retries = c.entry.retry.enabled();
        if (amo && started > 1 && !retries) {
          report.violate({"amo.duplicate", name + " (at-most-once) started " + std::to_string(started) + " times", due_ms, {}});
        }
        if (amo && started > 1 && retries) {
          const std::string why = retry_chain_break(execs, it->second, c.entry.retry);
          if (!why.empty()) report.violate({"retry.amo", name + " (at-most-once, retries): " + why, due_ms, {}});
        }
        // A client can always tell a duplicate: at most one run of an occurrence is a first
        // attempt without the possible_duplicate flag (every other run is a later attempt or
        // flagged).
        if (started > 1) {
          size_t plain = 0;
          for (size_t idx : it->second) {
            const auto& inv = execs[idx].invocation;
            if (inv.attempt == 1 && !inv.possible_duplicate) ++plain;
          }
          if (plain > 1) {
            report.violate({"duplicate.unflagged", name + " ran " + std::to_string(plain) +
                                                       " times as an unflagged first attempt", due_ms, {}});
          }
        }
        // A redispatch because a run outlived the entry's complete_time is the entry asking
        // for speed over uniqueness (seed 003, slow worker), not a fault-free duplicate.
        size_t by_complete_time = 0;
        if (it != executions_.end() && c.entry.complete_time_ms > 0) {
          for (size_t idx : it->second) {
            const Execution& later = execs[idx];
            if (later.invocation.attempt <= 1) continue;
            for (size_t j : it->second) {
              const Execution& earlier = execs[j];
              const int64_t ran_until = earlier.done_ms >= 0 ? earlier.done_ms : end_ms;
              if (earlier.start_ms < later.start_ms && ran_until - earlier.start_ms >= c.entry.complete_time_ms) {
                ++by_complete_time;
                break;
              }
            }
          }
        }
        if (fault_free && !unacked && due_ms - c.at_ms > options_.replication_grace_ms && started > 0 && retries) {
          const std::string why =
              retry_left_undone(execs, it->second, c.entry.retry, end_ms - options_.healthy_lateness_ms);
          if (!why.empty()) report.violate({"healthy.retry", name + ": " + why, due_ms, {}});
        }
        // (Several runs of an entry that retries are its chain: healthy.retry's business.)
        if (fault_free && !unacked && due_ms - c.at_ms > options_.replication_grace_ms &&
            (retries ? started == 0 : started - by_complete_time != 1) && !(started == 0 && overlap_skipped)) {
          report.violate({"healthy.once", name + " ran " + std::to_string(started) + " times in a run without faults", due_ms, {}});
        }
        // ALO: some eligible replica holding the entry stayed up long enough.
        // (A master that found it late and skipped or missed it by the entry's misfire policy
        // decided; lateness is judged separately.)
        if (!amo && judged && counted == 0 && !d.missed && !overlap_skipped &&
            due_ms + options_.detection_bound_ms <= end_ms) {
          for (const auto& r : elig) {
            const int64_t ri = world.index_of(r);
            const int64_t vi = world.index_of(c.via);
            if (ri < 0 || vi < 0) continue;
            const auto rn = static_cast<uint32_t>(ri), vn = static_cast<uint32_t>(vi);
            // Another replica holds it if the node that took the write stayed up, and linked
            // to it, while it replicated: a node that crashed right after the write may have
            // lost it before it was durable (the write was then never acknowledged).
            const bool holds = r == c.via || (world.linked_throughout(vn, rn, c.at_ms, c.at_ms + 2'000) &&
                                              world.healthy_throughout(vn, c.at_ms, c.at_ms + 2'000));
            if (holds && world.healthy_throughout(rn, c.at_ms, due_ms + options_.detection_bound_ms) &&
                c.entry.misfire_window_ms >= options_.detection_bound_ms) {
              report.violate({"alo.missed", name + " (at-least-once) never completed although replica " + r +
                                                " held it and stayed up",
                              due_ms, r});
              break;
            }
          }
        }
        // AMO liveness: a majority of the eligible replicas up and connected around the due time.
        // (Running twice is amo.duplicate's business; liveness is about running at all.)
        const int64_t live_to_ms = due_ms + options_.liveness_window_ms;
        if (amo && judged && started == 0 && !overlap_skipped && due_ms - c.at_ms > options_.replication_grace_ms &&
            c.entry.misfire_window_ms >= options_.detection_bound_ms &&
            !taken_away_by_later_write(versions, version, *next, fire_utc, live_to_ms)) {
          const int64_t from = due_ms - options_.liveness_before_ms, to = live_to_ms;
          std::vector<uint32_t> healthy;
          for (const auto& r : elig) {
            const int64_t ri = world.index_of(r);
            if (ri >= 0 && world.healthy_throughout(static_cast<uint32_t>(ri), std::max<int64_t>(0, c.at_ms), to)) {
              healthy.push_back(static_cast<uint32_t>(ri));
            }
          }
          // The largest group of healthy replicas all pairwise connected (greedy: replicas
          // are few, so try each as a seed).
          std::vector<uint32_t> best_group;
          for (uint32_t seed : healthy) {
            std::vector<uint32_t> group{seed};
            for (uint32_t other : healthy) {
              if (other == seed) continue;
              bool ok = true;
              for (uint32_t g : group) ok = ok && world.healthy_pair_throughout(g, other, from, to);
              if (ok) group.push_back(other);
            }
            if (group.size() > best_group.size()) best_group = group;
          }
          // A worker the occurrence went to that crashed, or was cut off from that group,
          // may have accepted it: at-most-once must then wait for its answer (or report the
          // occurrence lost), so exactly-once cannot be required.
          bool worker_cut_off = false;
          for (const auto& w : d.workers) {
            const int64_t wi = world.index_of(w);
            if (wi < 0) continue;
            const auto wn = static_cast<uint32_t>(wi);
            if (std::find(best_group.begin(), best_group.end(), wn) == best_group.end() ||
                !world.healthy_throughout(wn, from, end_ms)) {
              worker_cut_off = true;
            }
            // A restart replaces the process at once (healthy throughout, by the history),
            // but a held prepared run ended with it, maybe started (Options::max_clock_skew_ms).
            for (const FaultRecord& f : faults_) {
              const bool ends_process = f.kind == FaultKind::kCrash || f.kind == FaultKind::kRestart;
              if (options_.prepare_ahead_ms > 0 && ends_process &&
                  std::find(f.nodes.begin(), f.nodes.end(), wn) != f.nodes.end() &&
                  f.time_ms >= due_ms - 2 * options_.max_clock_skew_ms && f.time_ms <= due_ms) {
                worker_cut_off = true;
              }
            }
          }
          // The group can only fire what it holds: the node that took the write is in it, or
          // one of its members was connected to that node while the entry replicated (an
          // entry written on the other side of a partition reaches the group only later).
          bool group_holds = false;
          if (const int64_t vi = world.index_of(c.via); vi >= 0) {
            const auto vn = static_cast<uint32_t>(vi);
            // As for at-least-once above: the writer must also have stayed up while the entry
            // replicated (swarm seed 19499: the writer crashed 2 ms after the write, before
            // it was durable, and the checker still counted the entry as replicated).
            const bool writer_up =
                world.healthy_throughout(vn, c.at_ms, c.at_ms + options_.replication_grace_ms);
            for (uint32_t g : best_group) {
              group_holds = group_holds || g == vn ||
                            (writer_up && world.linked_throughout(vn, g, c.at_ms, c.at_ms + options_.replication_grace_ms));
            }
          }
          if (best_group.size() * 2 > elig.size() && !worker_cut_off && group_holds) {
            std::string group;
            for (uint32_t g : best_group) group += (group.empty() ? "" : ", ") + world.spec(g).id;
            report.violate({"amo.liveness", name + " (at-most-once) ran " + std::to_string(started) +
                                                " times although a majority of its replicas (" + group +
                                                ") was up and connected",
                            due_ms, {}});
          }
        }
      }
    }
  }
  // Executions of occurrences no version produced (before the evaluation cutoff): those
  // of a version replaced or deleted before they were due.  Running one twice is still a
  // duplicate when every version of the entry was at-most-once.
  const int64_t cutoff_utc = epoch + end_ms - 2 * options_.detection_bound_ms;
  for (const auto& [k, v] : executions_) {
    if (expected.count(k) || k.scheduled_utc_ms > cutoff_utc) continue;
    unknown_executions_ += v.size();
    auto versions = created_.find({k.volume, k.key});
    if (versions == created_.end() || v.size() < 2) continue;
    bool all_amo = true;
    schedule::RetryPolicy retry;  // the most runs any version allows
    for (const Created& c : versions->second) {
      all_amo = all_amo && (c.deleted || c.entry.semantics == schedule::Semantics::at_most_once);
      if (!c.deleted && c.entry.retry.attempts > retry.attempts) retry = c.entry.retry;
    }
    if (all_amo && retry.enabled()) {
      const std::string why = retry_chain_break(execs, v, retry);
      if (!why.empty()) {
        report.violate({"retry.amo", occ_name(k.volume, k.key, k.scheduled_utc_ms) + " (at-most-once, retries): " + why,
                        k.scheduled_utc_ms - epoch, {}});
      }
    } else if (all_amo) {
      report.violate({"amo.duplicate", occ_name(k.volume, k.key, k.scheduled_utc_ms) + " (at-most-once) started " +
                                           std::to_string(v.size()) + " times",
                      k.scheduled_utc_ms - epoch, {}});
    }
  }
  check_overlap(world, report);
  check_caps(world, report);
  const char* names[2] = {"alo", "amo"};
  for (int s = 0; s < 2; ++s) {
    const std::string p = names[s];
    report.set(p + ".due", static_cast<double>(tally[s].due));
    report.set(p + ".once", static_cast<double>(tally[s].once));
    report.set(p + ".duplicates", static_cast<double>(tally[s].duplicates));
    report.set(p + ".withheld", static_cast<double>(tally[s].withheld));
    report.set(p + ".missed", static_cast<double>(tally[s].missed));
    report.set(p + ".lost", static_cast<double>(tally[s].lost));
    report.set(p + ".executions", static_cast<double>(tally[s].executions));
  }
  report.set("fire.unexpected_executions", static_cast<double>(unknown_executions_));
  report.set("masters.max_concurrent", static_cast<double>(max_concurrent_masters_));
  report.add_summary("fire.lateness_ms", lateness_all);
  report.add_summary("fire.lateness_healthy_ms", lateness_healthy);
  report.add_summary("fire.lateness_after_fault_ms", lateness_faulty);
  const double occurrences = static_cast<double>(tally[0].due + tally[1].due);
  if (occurrences > 0) {
    const double messages = static_cast<double>(world.datagram_stats().sent + world.stream_stats().sent);
    report.set("fire.messages_per_occurrence", messages / occurrences);
    report.set("fire.stream_messages_per_occurrence", static_cast<double>(world.stream_stats().sent) / occurrences);
  }
}

namespace {

const char* outcome_name(Execution::Outcome o) {
  switch (o) {
    case Execution::Outcome::kRunning: return "still running";
    case Execution::Outcome::kOk: return "succeeded";
    case Execution::Outcome::kFailed: return "failed";
    case Execution::Outcome::kAbandoned: return "died with its node";
    case Execution::Outcome::kHung: return "hung";
    case Execution::Outcome::kTimedOut: return "timed out";
    case Execution::Outcome::kReplaced: return "stopped (replaced)";
  }
  return "?";
}

bool definite_failure(const Execution& e) {
  return e.outcome == Execution::Outcome::kFailed || e.outcome == Execution::Outcome::kTimedOut;
}

void by_start(const std::vector<Execution>& execs, std::vector<size_t>& idxs) {
  std::stable_sort(idxs.begin(), idxs.end(), [&](size_t a, size_t b) { return execs[a].start_ms < execs[b].start_ms; });
}

}  // namespace

std::string FireChecker::retry_chain_break(const std::vector<Execution>& execs, std::vector<size_t> idxs,
                                           const schedule::RetryPolicy& retry) {
  by_start(execs, idxs);
  if (idxs.size() > retry.attempts) {
    return "ran " + std::to_string(idxs.size()) + " times, more than retry.attempts = " + std::to_string(retry.attempts);
  }
  for (size_t i = 0; i < idxs.size(); ++i) {
    const Execution& e = execs[idxs[i]];
    if (e.invocation.run != i + 1) {
      return "run " + std::to_string(i + 1) + " (fire id " + e.invocation.fire_id + ") was given run number " +
             std::to_string(e.invocation.run);
    }
  }
  for (size_t i = 1; i < idxs.size(); ++i) {
    const Execution& prev = execs[idxs[i - 1]];
    const Execution& next = execs[idxs[i]];
    if (!definite_failure(prev)) {
      return "run " + std::to_string(i + 1) + " (fire id " + next.invocation.fire_id + ") followed a run that " +
             outcome_name(prev.outcome) + " (fire id " + prev.invocation.fire_id + ")";
    }
    if (next.start_ms < prev.done_ms) {
      return "run " + std::to_string(i + 1) + " (fire id " + next.invocation.fire_id + ") started " +
             std::to_string(prev.done_ms - next.start_ms) + " ms before the run it follows ended";
    }
  }
  return {};
}

std::string FireChecker::retry_left_undone(const std::vector<Execution>& execs, std::vector<size_t> idxs,
                                           const schedule::RetryPolicy& retry, int64_t end_ms) {
  by_start(execs, idxs);
  const Execution& last = execs[idxs.back()];
  if (!definite_failure(last) || idxs.size() >= retry.attempts) return {};
  const int64_t owed_by = last.done_ms + std::max(retry.max_backoff_ms, retry.backoff_ms);
  if (owed_by > end_ms) return {};
  return "run " + std::to_string(idxs.size()) + " of " + std::to_string(retry.attempts) + " " +
         outcome_name(last.outcome) + " and no run followed it";
}

// An at-most-once forbid occurrence due (virtual due_ms) while another occurrence of its
// entry may have been running as far as the replicas could know: one of its runs had not
// ended by then (+ a margin for the news), or an attempt of it was dispatched or granted
// and never ran to an end (a worker cut off or crashed: at-most-once cannot tell whether
// it runs, and keeps the entry blocked — docs/firing.md, Overlap).  Such an occurrence is
// not owed a run.
bool FireChecker::overlap_blocked(const World& world, const OccKey& k, int64_t due_ms) const {
  constexpr int64_t kNewsMarginMs = 5'000;
  const auto& execs = world.executions();
  const int64_t epoch = scenario_.world.epoch_utc_ms;
  for (auto it = decisions_.lower_bound(OccKey{k.volume, k.key, INT64_MIN});
       it != decisions_.end() && it->first.volume == k.volume && it->first.key == k.key; ++it) {
    if (it->first.scheduled_utc_ms == k.scheduled_utc_ms || it->first.scheduled_utc_ms - epoch > due_ms) continue;
    if (it->second.workers.empty()) continue;  // never granted or dispatched anywhere
    // When its last run ended; never, when none ran or one did not end (crashed, hung).
    int64_t ended_ms = -1, last_start_ms = -1;
    auto runs = executions_.find(it->first);
    if (runs == executions_.end()) return true;
    for (size_t idx : runs->second) {
      ended_ms = execs[idx].done_ms < 0 ? kNever : std::max(ended_ms, execs[idx].done_ms);
      last_start_ms = std::max(last_start_ms, execs[idx].start_ms);
    }
    if (ended_ms == kNever || ended_ms + kNewsMarginMs > due_ms) return true;
    // A later attempt (a retry) dispatched after its last run started, that never ran:
    // in doubt until it was reported lost (swarm --retries --overlap seed 1491: run 4
    // went to a worker whose answers were cut off, and forbid kept the entry blocked).
    const Decisions& d = it->second;
    if (d.last_dispatch_ms > last_start_ms && (d.lost_ms < 0 || d.lost_ms + kNewsMarginMs > due_ms)) return true;
  }
  return false;
}

int64_t FireChecker::execution_end_ms(const Execution& e) const {
  int64_t end = e.done_ms >= 0 ? e.done_ms : kNever;
  if (e.outcome == Execution::Outcome::kAbandoned) {
    for (const FaultRecord& f : faults_) {
      // A crash, a restart (which replaces a running process at once: churn) or a stop
      // ends the process, and its runs with it.
      const bool this_node = std::find(f.nodes.begin(), f.nodes.end(), e.node) != f.nodes.end();
      const bool ends_process =
          f.kind == FaultKind::kCrash || f.kind == FaultKind::kRestart || f.kind == FaultKind::kStopped;
      if (ends_process && this_node && f.time_ms >= e.start_ms) end = std::min(end, f.time_ms);
    }
  }
  return end;
}

// cap.exceeded: on every node, the runs going on at once (invocation to end, as for
// overlap.forbid) never outnumber the running cap.  A run that ends at the instant
// another starts does not overlap it.
void FireChecker::check_caps(const World& world, Report& report) const {
  if (options_.running_cap == 0) return;
  const auto& execs = world.executions();
  std::map<uint32_t, std::vector<std::pair<int64_t, int>>> edges;  // node -> (time, -1 end / +1 start)
  for (const Execution& e : execs) {
    edges[e.node].emplace_back(e.start_ms, +1);
    if (const int64_t end = execution_end_ms(e); end != kNever) edges[e.node].emplace_back(end, -1);
  }
  size_t most = 0;
  for (auto& [node, list] : edges) {
    std::sort(list.begin(), list.end());  // at one instant, ends (-1) before starts (+1)
    int64_t running = 0;
    bool reported = false;
    for (const auto& [t, step] : list) {
      running += step;
      most = std::max(most, static_cast<size_t>(std::max<int64_t>(running, 0)));
      if (!reported && running > static_cast<int64_t>(options_.running_cap)) {
        reported = true;
        report.violate({"cap.exceeded",
                        world.spec(node).id + " ran " + std::to_string(running) + " handlers at once, over its cap of " +
                            std::to_string(options_.running_cap),
                        t, world.spec(node).id});
      }
    }
  }
  report.set("cap.most_running", static_cast<double>(most));
}

// overlap.forbid: no two runs of one at-most-once forbid entry at once, on the real
// execution intervals — from the invocation to its completion, to its node's crash (the
// run dies with the process), or to the end of the run (a hung or still running handler).
// Two runs of one occurrence are amo.duplicate's business.  Entries some version of which
// was not at-most-once forbid are not judged: the guarantee is for runs claimed under it.
void FireChecker::check_overlap(const World& world, Report& report) const {
  const auto& execs = world.executions();
  uint64_t checked = 0;
  for (const auto& [ck, versions] : created_) {
    bool forbid = true;
    for (const Created& c : versions) {
      forbid = forbid &&
               (c.deleted || (c.entry.semantics == schedule::Semantics::at_most_once && one_run_at_a_time(c.entry)));
    }
    if (!forbid) continue;
    struct Run {
      int64_t start_ms, end_ms, scheduled_utc_ms;
      size_t index;
    };
    std::vector<Run> runs;
    for (auto it = executions_.lower_bound(OccKey{ck.first, ck.second, INT64_MIN});
         it != executions_.end() && it->first.volume == ck.first && it->first.key == ck.second; ++it) {
      for (size_t idx : it->second) {
        const Execution& e = execs[idx];
        runs.push_back(Run{e.start_ms, execution_end_ms(e), it->first.scheduled_utc_ms, idx});
      }
    }
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
      return std::tie(a.start_ms, a.index) < std::tie(b.start_ms, b.index);
    });
    checked += runs.size();
    // The run reaching furthest so far: any later start before its end overlaps it.
    const Run* furthest = nullptr;
    for (const Run& r : runs) {
      if (furthest != nullptr && r.start_ms < furthest->end_ms && r.scheduled_utc_ms != furthest->scheduled_utc_ms) {
        report.violate({"overlap.forbid",
                        occ_name(ck.first, ck.second, r.scheduled_utc_ms) + " (at-most-once, one run at a time) started on " +
                            world.spec(execs[r.index].node).id + " while the run of " +
                            occ_name(ck.first, ck.second, furthest->scheduled_utc_ms) + " on " +
                            world.spec(execs[furthest->index].node).id + " was still running",
                        r.start_ms, world.spec(execs[r.index].node).id});
      }
      if (furthest == nullptr || r.end_ms > furthest->end_ms) furthest = &r;
    }
  }
  report.set("overlap.forbid_runs", static_cast<double>(checked));
}

}  // namespace caesium::sim
