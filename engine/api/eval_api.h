// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluate a model on data, optionally against a teacher: the engine behind `quantlab-cli eval`
// and the GUI's eval panel (docs/CLI.md "eval", docs/DATA.md). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/jobs/job.h"

namespace ql {

// Metrics of one evaluation (or one domain of it). Unset = not applicable.
struct EvalMetrics {
    double loss = 0;                     // mean NLL per scored token (per image), natural log
    std::optional<double> ppl;           // exp(loss); token models only
    std::optional<double> exact_match;   // 0-1, data with answers (synthetic tasks)
    std::optional<double> accuracy;      // 0-1, classifiers (argmax == label)
    std::optional<double> kl;            // mean KL(teacher || student) per scored position, nats
    std::optional<double> agreement;     // 0-1, student top-1 == teacher top-1 per scored position
    int64_t tokens = 0;                  // scored positions (images for classifiers)
    int64_t examples = 0;                // sequences / images
};

struct EvalRequest {
    std::string model;            // HF folder, or "demo" (the cached built-in demo)
    std::string teacher;          // optional, same vocabulary / classes
    std::string data;             // path or built-in spec (docs/DATA.md)
    std::string split;            // "", "train", "validation", "all" ("" = the data's default)
    int64_t samples = 0;          // 0 = the data's default
    uint64_t seed = 0;            // synthetic data
    int64_t sequence_length = 0;  // 0 = default
    int64_t batch_size = 0;       // 0 = about 8192 tokens per batch
    std::string token_dtype;      // raw .bin token files: "uint16" | "uint32" | "" (infer)
};

struct EvalReport {
    EvalMetrics overall;
    // Per domain, in spec order (synthetic arithmetic "+", "-", "*", copy, reverse).
    std::vector<std::pair<std::string, EvalMetrics>> domains;
    std::string model_path;  // resolved folder
    std::string split;       // the split used
    double seconds = 0;      // wall time of the evaluation (loading excluded)
};

// Loads the model(s) and data, evaluates, reports progress ("load", "eval") through the sink and
// stops with JobCancelled when `cancel` is set. Bad input is a UserError naming the file/field.
EvalReport run_eval(const EvalRequest& request, JobSink& sink, const CancellationToken& cancel);

// Reports `report` as metric points at `step`: eval/loss, eval/ppl, eval/exact_match,
// eval/accuracy, eval/kl, eval/agreement (those that apply) and eval/exact_match/<domain>.
void report_eval_metrics(JobSink& sink, int64_t step, const EvalReport& report);

// Parses "train" / "validation" / "val" / "all"; UserError otherwise.
std::string normalise_split_name(const std::string& split);

}  // namespace ql
