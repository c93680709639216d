// SPDX-License-Identifier: GPL-3.0-or-later
// Judging one generated text against one suite item (docs/EVAL_SUITES.md "Checks"): the one
// call a runner makes per item. Deterministic and pure: the same item and text give the same
// outcome. Plain C++.
#pragma once

#include <string_view>

#include "engine/evaluation/eval_results.h"
#include "engine/evaluation/eval_suite.h"

namespace ql::evaluation {

// The outcome of `item` for `output` (any bytes: invalid UTF-8 is replaced by U+FFFD first, as
// Python's decode(errors="replace") does). tokens_generated and seconds are left 0 for the runner.
ItemOutcome check(const EvalItem& item, std::string_view output);

// The numbers the numeric check reads, left to right: kNumberPattern (ASCII digits) with the
// thousands commas dropped (exposed for tests and the lm-eval export).
constexpr const char* kNumberPattern = "-?[0-9]+(?:,[0-9]{3})*(?:\\.[0-9]+)?";
std::vector<double> numbers_in(std::string_view text);

}  // namespace ql::evaluation
