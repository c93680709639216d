// SPDX-License-Identifier: GPL-3.0-or-later
// An eval suite as lm-evaluation-harness tasks (docs/EVAL_SUITES.md "lm-eval export"), so that
// lm-eval can score the same items with its own generation loop and its own metric code: the
// peer for QuantLab's runner and checkers. Each exported item becomes a document of a
// generate_until task whose filters and exact_match metric reproduce our check:
//   exact    exact_match; strip / strip_punctuation as regexes_to_ignore, lowercase as ignore_case
//   numeric  (integer value, tolerance 0) regex filter kNumberPattern, first or last match
//            (group_select 0 / -1), exact_match ignoring "," and a trailing ".0…"
//   regex    regex filter with the item's pattern, map {"[invalid]": "0"} else "1", exact_match
//            against "1" (one task per pattern: lm-eval's filters are per task)
// Other checks, and items lm-eval cannot prompt as we do (tools, assistant or tool turns,
// more than one system message), are left out with the reason. Plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/evaluation/eval_suite.h"

namespace ql::evaluation {

struct LmEvalExport {
    std::string group;                      // the group task to run: lm_eval --tasks <group>
    std::vector<std::string> tasks;         // its tasks
    std::vector<std::string> files;         // written, relative to the folder
    std::vector<std::string> exported_ids;  // in suite order
    std::vector<std::pair<std::string, std::string>> left_out;  // item id, reason
};

// Writes into `out_dir` (created; files replaced atomically): <group>.yaml (the group, its
// aggregate exact_match weighted by size), one <task>.yaml and <task>.jsonl per task (documents
// {"id", "category", "system", "prompt", "target"}), and <group>_left_out.tsv (id<TAB>reason).
// The task files name their JSONL by absolute path (datasets resolves relative paths against the
// working directory, not the YAML). Items without max_tokens generate up to default_max_tokens.
// `group` must be letters, digits and _; UserError otherwise, or when no item can be exported.
LmEvalExport export_lm_eval_tasks(const EvalSuite& suite, const std::string& out_dir, const std::string& group,
                                  int64_t default_max_tokens);

}  // namespace ql::evaluation
