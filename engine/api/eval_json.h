// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluation metrics as the JSON the CLI prints and reports store (docs/CLI.md "eval"): loss,
// ppl, exact_match, accuracy, kl, agreement, cosine_mean, cosine_p5, cosine_min, spearman,
// teacher_spearman (null where not applicable or not finite), tokens, examples, pairs. Facade header: plain C++ (nlohmann::json is header-only).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/api/eval_api.h"

namespace ql {

nlohmann::json eval_metrics_json(const EvalMetrics& metrics);
// The overall metrics plus "domains": {name: metrics} (an empty object without domains) and
// "pooling" (encoders: the sentence embedding, e.g. "mean, normalized"; else null).
nlohmann::json eval_report_json(const EvalReport& report);

}  // namespace ql
