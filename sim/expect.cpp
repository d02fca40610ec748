#include "sim/expect.h"

#include <set>
#include <sstream>

namespace caesium::sim {

namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

void evaluate_expect(const Expect& expect, Report& report) {
  const bool named = expect.violations.has_value() || !expect.violation_kinds.empty();
  report.violations_expected = named;
  if (expect.violations && report.violations.size() != *expect.violations) {
    report.expect_failures.push_back("violations: expected " + std::to_string(*expect.violations) +
                                     ", got " + std::to_string(report.violations.size()));
  }
  if (!expect.violation_kinds.empty()) {
    std::set<std::string> wanted(expect.violation_kinds.begin(), expect.violation_kinds.end());
    std::set<std::string> seen;
    for (const Violation& v : report.violations) {
      seen.insert(v.invariant);
      if (wanted.count(v.invariant) == 0) {
        report.expect_failures.push_back("violation_kinds: unexpected violation '" + v.invariant +
                                         "': " + v.detail);
      }
    }
    for (const std::string& w : wanted) {
      if (seen.count(w) == 0) {
        report.expect_failures.push_back("violation_kinds: expected a '" + w +
                                         "' violation, none occurred");
      }
    }
  }
  for (const Expectation& e : expect.checks) {
    auto it = report.figures.find(e.figure);
    if (it == report.figures.end()) {
      report.expect_failures.push_back(e.where + ": figure '" + e.figure +
                                       "' was not reported (misspelt?)");
      continue;
    }
    const double v = it->second;
    bool ok = true;
    std::string bound;
    switch (e.op) {
      case Expectation::Op::kEqual: ok = v == e.value; bound = "== " + num(e.value); break;
      case Expectation::Op::kMin: ok = v >= e.value; bound = ">= " + num(e.value); break;
      case Expectation::Op::kMax: ok = v <= e.value; bound = "<= " + num(e.value); break;
    }
    if (!ok) {
      report.expect_failures.push_back(e.where + ": " + e.figure + " expected " + bound +
                                       ", got " + num(v));
    }
  }
}

}  // namespace caesium::sim
