// SPDX-License-Identifier: GPL-3.0-or-later
// Running an eval suite through a model (docs/EVAL_SUITES.md "Running a suite"): each item's
// conversation rendered by the model's own chat template (engine/generation/chat_prompt.h) with
// a generation prompt, its tools passed to the template -- or, when the template ignores
// `tools` (SmolLM2's does: the rendering with and without them is the same), written into the
// system message as Qwen2.5's template writes them (tool_prompt.h) -- then generated
// (engine/generation/text_generator.h; greedy, or N seeded samples) and judged by check(). A
// model without a chat template (the demo) gets the single user message as a plain prompt.
// Records the run's manifest, per-generation timings and the serving cost. Checks cancellation
// between items (and between tokens inside generation).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/evaluation/eval_suite.h"
#include "engine/evaluation/evaluation_run.h"
#include "engine/generation/sampling_settings.h"
#include "engine/jobs/job.h"
#include "engine/loading/model_source.h"

namespace ql::evaluation {

struct SuiteRunSettings {
    std::string label;                 // the run's label ("" = derived from the model)
    int64_t max_tokens = 256;          // generated tokens of items without their own max_tokens
    SamplingSettings sampling;         // temperature 0: greedy; its seed is the run's seed
    int64_t samples = 1;               // replicates; > 1 needs sampling (temperature > 0)
    std::vector<std::string> item_ids; // the items to run, suite order kept ("" / empty = all)
    std::string device = "cpu";        // for the manifest and the measured speed
    std::vector<int64_t> kv_contexts = {2048, 8192, 32768};  // KV-cache bytes reported per context
    std::vector<std::string> gpus = {"H200"};                // decode estimates (serving_cost.h named_gpus)
    int64_t estimate_context = 2048;   // context the estimates' KV read assumes
    // Progress: this run's generations are reported as units offset + 1 ... of `progress_total`
    // (0: this run's own count), so one evaluation of several models has one count and one ETA.
    int64_t progress_offset = 0, progress_total = 0;
};

// UserError for bad settings (samples < 1, samples > 1 when greedy, max_tokens < 1, an unknown
// item id or GPU name).
void validate_suite_run(const SuiteRunSettings& settings, const EvalSuite& suite);

// Called after each generation with the replicate and the checked outcome.
using ItemCallback = std::function<void(int64_t replicate, const ItemOutcome& outcome)>;

// Runs the suite's items through `m` (opened with engine/loading/model_source.h, on its device).
// `model_arg` is the MODEL argument as given (manifest). The result has no logit metrics (the
// evaluation facade adds them). UserError: a model that does not generate text or has no
// tokenizer; an item with more than a user message, or with tools, for a model without a chat
// template. JobCancelled between items.
EvaluationRun run_suite(OpenedModel& m, const std::string& model_arg, const EvalSuite& suite, const SuiteRunSettings& settings,
                        JobSink& sink, const CancellationToken& cancel, const ItemCallback& on_item = {});

// The system message a chat template writes when the conversation has none ("" when it writes
// none): found by rendering one user turn with and without a marker system message.
std::string template_default_system(const ModelText& text);

// Whether a chat template renders `tools` (false when the rendering of `conversation` with them
// equals the one without).
bool template_renders_tools(const ModelText& text, const nlohmann::ordered_json& conversation, const nlohmann::ordered_json& tools);

// The run's default label: "fp" for a full-precision folder, the recipe's name for a quantized
// checkpoint, "gguf <file type>" for a GGUF file, "demo" for the demo.
std::string default_run_label(const OpenedModel& m);

}  // namespace ql::evaluation
