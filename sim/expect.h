// Evaluates a scenario's [expect] against a finished Report: each failed expectation
// becomes a line in report.expect_failures naming the figure, the bound and the value.
#pragma once

#include "sim/report.h"
#include "sim/scenario.h"

namespace caesium::sim {

// Also decides whether the violations in the report were expected
// (report.violations_expected): only when [expect] names them (violations = N or
// violation_kinds), so a scenario proving that a checker bites can pass.
void evaluate_expect(const Expect& expect, Report& report);

}  // namespace caesium::sim
