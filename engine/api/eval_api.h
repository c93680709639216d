// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluate a model on data, optionally against a teacher: the engine behind `quantlab-cli eval`
// and the GUI's eval panel (docs/CLI.md "eval", docs/DATA.md). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/eval_report.h"
#include "engine/jobs/job.h"

namespace ql {

struct EvalRequest {
    std::string model;            // HF folder, or "demo" (the cached built-in demo)
    std::string teacher;          // optional, same vocabulary / classes
    std::string data;             // path or built-in spec (docs/DATA.md); encoders: sentences,
                                  // one per line, or a pairs file (sentence1<TAB>sentence2<TAB>score)
    std::string split;            // "", "train", "validation", "all" ("" = the data's default)
    int64_t samples = 0;          // 0 = the data's default
    uint64_t seed = 0;            // synthetic data
    int64_t sequence_length = 0;  // 0 = default
    int64_t batch_size = 0;       // 0 = about 8192 tokens per batch
    std::string token_dtype;      // raw .bin token files: "uint16" | "uint32" | "" (infer)
    std::string windows;          // text windows: "quantlab" (default) | "hf" | "llama" (docs/DATA.md)
    int64_t stride = 0;           // windows "hf": tokens between window starts (0 = the window length)
    // Encoders: a pairs file whose Spearman correlations (model, teacher) are reported besides
    // the metrics on `data` ("" = none; `data` may itself be a pairs file).
    std::string pairs;
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

// Loads the model(s) and data, evaluates, reports progress ("load", "eval") through the sink and
// stops with JobCancelled when `cancel` is set. Bad input is a UserError naming the file/field.
EvalReport run_eval(const EvalRequest& request, JobSink& sink, const CancellationToken& cancel);

// Reports `report` as metric points at `step`: eval/loss, eval/ppl, eval/exact_match,
// eval/accuracy, eval/kl, eval/agreement, eval/cosine_mean, eval/cosine_p5, eval/cosine_min,
// eval/spearman, eval/teacher_spearman (those that apply) and eval/exact_match/<domain>.
void report_eval_metrics(JobSink& sink, int64_t step, const EvalReport& report);

// Parses "train" / "validation" / "val" / "all"; UserError otherwise.
std::string normalise_split_name(const std::string& split);

}  // namespace ql
