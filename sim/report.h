// The outcome of one simulator run: named figures, invariant violations, the result of
// the scenario's [expect] assertions, and how to replay the run.
//
// Figures are a flat, sorted map of name -> number so that `[expect]` can assert on any
// of them by name and JSON output is stable.  Naming: "<area>.<figure>[.<stat>]", e.g.
// "net.datagram.sent", "membership.false_deaths", "membership.detection.first_suspect_ms.p99".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caesium::sim {

struct Violation {
  std::string invariant;  // short stable name: "datagram_size", "busy_loop", "amo.duplicate"
  std::string detail;     // a sentence a person can act on
  int64_t time_ms = -1;   // virtual time, -1 when not tied to an instant
  std::string node;       // node id when one is to blame
};

struct Report {
  std::string scenario;  // file path or "swarm"
  uint64_t seed = 0;
  std::string replay;    // the exact command that replays this run
  int64_t virtual_ms = 0;
  uint64_t events = 0;
  uint64_t trace_hash = 0;

  std::map<std::string, double> figures;
  std::vector<Violation> violations;
  std::vector<std::string> expect_failures;
  // The scenario's [expect] named the violations (a run proving a checker bites):
  // they no longer fail the run by themselves; expect_failures says whether they matched.
  bool violations_expected = false;

  void set(const std::string& name, double value) { figures[name] = value; }
  void add(const std::string& name, double delta) { figures[name] += delta; }
  // Adds "<prefix>.count", and when there are samples ".mean", ".p50", ".p99", ".max".
  void add_summary(const std::string& prefix, std::vector<int64_t> samples);
  void violate(Violation v) { violations.push_back(std::move(v)); }

  // No unexpected invariant violation and every [expect] held.
  bool passed() const {
    return (violations.empty() || violations_expected) && expect_failures.empty();
  }

  nlohmann::json to_json() const;
  // A human-readable report (figures grouped by area, then violations with replay).
  std::string to_text() const;
};

// The p-th percentile (0..100) by nearest rank of sorted samples.  REQUIRES: non-empty.
int64_t percentile(const std::vector<int64_t>& sorted, double p);

}  // namespace caesium::sim
