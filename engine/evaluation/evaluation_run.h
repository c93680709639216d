// SPDX-License-Identifier: GPL-3.0-or-later
// One model's evaluation run as data (docs/EVAL_SUITES.md "Runs"): its manifest, the checked
// answers of every replicate (one when greedy, N with --samples N), the prompts as sent, the
// logit metrics on real text against the reference model, and what the model costs to serve.
// Written as one JSON document (quantlab-cli evalsuite --out, the project's evalsuite record)
// and read back with every field checked. Plain C++.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/evaluation/eval_results.h"
#include "engine/evaluation/run_manifest.h"
#include "engine/evaluation/serving_cost.h"

namespace ql::evaluation {

// The logit metrics of the model on real text (engine/api/eval_api.h run_eval with the reference
// as teacher; engine/diagnosis/token_divergence.h): its perplexity and, against the reference
// (the first model of the evaluation), the perplexity difference, mean and 99th-percentile
// KL(reference || model) per token and the top-1 agreement.
struct LogitMetrics {
    std::string text;             // the text file
    std::string windows;          // "hf" (docs/DATA.md "Perplexity windows")
    int64_t window = 0;           // tokens per window
    int64_t max_windows = 0;      // at most this many windows of the text (0: all)
    int64_t tokens = 0;           // scored predictions
    double ppl = 0;
    std::string reference;        // label of the reference ("" for the reference itself)
    std::optional<double> ppl_reference, delta_ppl, kl_mean, kl_p99, top1_agreement;
    double seconds = 0;
};

// An item as it was sent: the last user message (what the Generate view is given) and the
// whole conversation (tools folded in when the template ignores them) as JSON text.
struct SentPrompt {
    std::string id;
    std::string user_text;
    std::string messages_json;
};

struct EvaluationRun {
    RunManifest manifest;
    std::vector<ModelEvalReport> replicates;  // replicate r: every item once, in suite order
    std::vector<SentPrompt> prompts;          // in suite order
    std::optional<LogitMetrics> logits;
    ServingCost cost;
    // (prefill, decode) seconds and prompt tokens per generation are folded into cost.measured.
};

nlohmann::ordered_json evaluation_run_json(const EvaluationRun& run);
// UserError "<source>: <field>: ..." (e.g. "replicates[0].items[3].passed").
EvaluationRun evaluation_run_from_json(const nlohmann::json& j, const std::string& source);
EvaluationRun load_evaluation_run(const std::string& path);
// Writes atomically (engine/io/atomic_file.h).
void save_evaluation_run(const EvaluationRun& run, const std::string& path);

// The share of items passed per replicate: what a sampled run's spread is.
std::vector<double> replicate_success_rates(const EvaluationRun& run);

}  // namespace ql::evaluation
