// SPDX-License-Identifier: GPL-3.0-or-later
// Judging models by their answers (docs/EVAL_SUITES.md): the engine behind `quantlab-cli
// evalsuite` and the GUI's Evaluation view. Each model answers an eval suite through its own chat
// template (engine/evaluation/suite_runner.h), the first model is the baseline (the FP model),
// and the result holds every run (manifest, checked answers, prompts, logit metrics on real
// text against the baseline, serving cost) and the tables comparing them
// (engine/evaluation/evaluation_tables.h). Saved runs (JSON files) can stand in for models, so a
// baseline is run once. Facade header: plain types only (the evaluation room is plain C++).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "engine/evaluation/evaluation_run.h"
#include "engine/evaluation/evaluation_tables.h"
#include "engine/jobs/job.h"

namespace ql {

struct EvalSuiteRequest {
    // Models in order, the first the baseline: HF folders, GGUF files, quantized checkpoints,
    // "demo", or saved evaluation runs (a .json file written by save_evaluation_run), which are
    // loaded instead of run.
    std::vector<std::string> models;
    std::vector<std::string> labels;       // per model ("" or missing: derived, e.g. "fp", "NVFP4_DEFAULT")
    std::string suite = "default";         // a suite file, or "default" (resources/evalsuites/default.jsonl)
    std::vector<std::string> items;        // only these item ids (empty: all)
    std::vector<std::string> categories;   // only items of these categories (empty: all)
    int64_t limit = 0;                     // at most this many items of the selection, in suite order (0: all)
    int64_t max_tokens = 256;              // items without their own max_tokens
    double temperature = 0;                // 0: greedy
    int64_t top_k = 0;
    double top_p = 1, min_p = 0, repetition_penalty = 1;
    uint64_t seed = 0;
    int64_t samples = 1;                   // replicates per item (sampled runs)
    // Real text for the logit metrics (perplexity; against the first model: Δppl, mean and p99
    // KL, top-1 agreement), cut into `windows` windows of `text_window` tokens ("" = none).
    std::string text;
    int64_t text_window = 512;
    int64_t text_windows = 0;              // at most this many windows of the text (0: all)
    std::string windows = "hf";
    std::vector<std::string> gpus = {"H200"};          // decode estimates
    int64_t estimate_context = 2048;
    std::vector<int64_t> kv_contexts = {2048, 8192, 32768};
    bool allow_mixed_settings = false;     // compare runs made with different settings anyway
    int64_t bootstrap_resamples = 2000;
    uint64_t bootstrap_seed = 38;
    std::string device = "cpu";
};

struct EvalSuiteResult {
    std::vector<evaluation::EvaluationRun> runs;  // in request order
    std::vector<bool> loaded;                     // per run: read from a saved file rather than run now
    evaluation::EvaluationTables tables;
};

// Called after each generation: the model's index, the replicate and the checked outcome.
using EvalSuiteItemCallback = std::function<void(size_t model, int64_t replicate, const evaluation::ItemOutcome& outcome)>;

// Checks everything first (suite, selection, settings, saved runs against each other), then runs
// each model in turn (one in memory at a time), its logit metrics, and the tables. Progress
// phases: "evalsuite" (every generation of every model, one count, so the ETA covers them all),
// then run_eval's for the logit metrics. UserError for bad input; runs with different settings
// are refused unless allow_mixed_settings; JobCancelled between items.
EvalSuiteResult run_evalsuite(const EvalSuiteRequest& request, JobSink& sink, const CancellationToken& cancel,
                              const EvalSuiteItemCallback& on_item = {});

// The tables of runs already made (the GUI's stored runs; quantlab-cli with saved runs only).
EvalSuiteResult compare_evaluation_runs(std::vector<evaluation::EvaluationRun> runs, bool allow_mixed_settings,
                                        int64_t bootstrap_resamples = 2000, uint64_t bootstrap_seed = 38);

// The shipped default suite's path, and a suite argument resolved ("default" -> that path).
std::string default_suite_path();
std::string resolve_suite_path(const std::string& suite);

// What a suite holds, for a picker: items, categories in order with their item counts, hash.
struct SuiteOverview {
    std::string path, sha256;
    int64_t items = 0;
    std::vector<std::pair<std::string, int64_t>> categories;
    // Categories holding json_schema items: only their answers count in evalsuite/json_valid.
    std::set<std::string> json_categories;
};
SuiteOverview describe_suite(const std::string& suite);

// The scalar metrics a project records for run `index` of `result` (at step 0):
// evalsuite/success (first replicate), evalsuite/success/<category>, evalsuite/json_valid,
// evalsuite/tool_name, evalsuite/tool_arguments, evalsuite/right_to_wrong and
// evalsuite/wrong_to_right (runs after the baseline), evalsuite/ppl, evalsuite/delta_ppl,
// evalsuite/kl_mean, evalsuite/kl_p99, evalsuite/top1_agreement (with logit metrics),
// evalsuite/weight_bytes, evalsuite/kv_bytes_per_token, evalsuite/prefill_tokens_per_second,
// evalsuite/ttft_s, evalsuite/decode_tokens_per_second, evalsuite/seconds_per_success.
std::vector<std::pair<std::string, double>> evaluation_run_metrics(const EvalSuiteResult& result, size_t index);

// The request's suite selection written as lm-evaluation-harness tasks into `folder`
// (engine/evaluation/lm_eval_export.h; group `group`; items without max_tokens generate up to
// request.max_tokens): lm-eval can then answer and score the same items itself. Returns the ids
// exported and (id, reason) of those left out.
struct LmEvalExportSummary {
    std::string group;
    std::vector<std::string> exported;
    std::vector<std::pair<std::string, std::string>> left_out;
};
LmEvalExportSummary export_evalsuite_lm_eval(const EvalSuiteRequest& request, const std::string& folder, const std::string& group);

// Writes every CSV table of `result` into `folder` (created; files replaced atomically); returns
// the paths written.
std::vector<std::string> write_evaluation_csv(const EvalSuiteResult& result, const std::string& folder);

}  // namespace ql
