// SPDX-License-Identifier: GPL-3.0-or-later
// Text generation for `quantlab-cli generate` and the GUI's Generate view (docs/GENERATION.md,
// docs/CLI.md "generate"): each prompt through each model -- the first model is the reference,
// usually the FP model, the others quantized checkpoints or GGUF files of the same vocabulary --
// with per-token probabilities, the most likely alternatives, and for the models after the
// first the KL between the reference's and the model's next-token distributions at each
// generated token and the first token where the outputs part. Facade header: plain types only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/jobs/job.h"

namespace ql {

struct GeneratePrompt {
    std::string text;          // a plain prompt, or the user turn when `chat`
    std::string messages_json; // instead of text: a JSON list of chat messages ("" = none)
};

struct GenerateRequest {
    std::vector<std::string> models;   // paths (HF folder, GGUF file, quantized checkpoint) or "demo"
    std::vector<GeneratePrompt> prompts;
    bool chat = false;                 // render through the model's chat template
    std::string system;                // chat: a system message before the user turn ("" = none)
    int64_t max_new_tokens = 128;
    double temperature = 0;            // 0 = greedy
    int64_t top_k = 0;
    double top_p = 1;
    double min_p = 0;
    double repetition_penalty = 1;
    uint64_t seed = 0;
    std::vector<std::string> stop;     // stop strings
    int64_t alternatives = 5;          // most likely tokens per generated position
    std::string device = "cpu";
};

struct GeneratedTokenInfo {
    int64_t id = 0;
    std::string text;
    double probability = 0;                                  // the model's probability of it
    std::vector<std::pair<std::string, double>> alternatives;  // most likely tokens there (text, p)
    double kl_to_reference = 0;                              // nats; 0 for the reference itself
};

struct GenerateOutput {
    std::string model;             // as given
    size_t model_index = 0, prompt_index = 0;
    std::string prompt;            // the prompt as given (text or messages JSON)
    std::string rendered_prompt;   // after the chat template (= prompt for plain prompts)
    std::vector<int64_t> prompt_ids;
    std::string text;              // the generated text
    std::vector<GeneratedTokenInfo> tokens;
    std::string stop_reason;       // end | stop_string | max_tokens
    double time_to_first_token_s = 0;
    double decode_tokens_per_second = 0;
    int64_t first_divergence = -1; // first generated token differing from the reference's (-1: none)
    double mean_kl = 0;            // over the generated tokens (0 for the reference)
    std::string chat_template_sha256;  // "" for plain prompts
};

struct GenerateReport {
    std::vector<GenerateOutput> outputs;  // model by model, prompts in order within each
    std::string sampling;                 // describe_sampling
};

// Called as tokens appear: output index (position in GenerateReport::outputs) and the token.
using GenerateStream = std::function<void(size_t output, const GeneratedTokenInfo& token)>;

// Loads each model in turn (one in memory at a time, plus the reference when comparing),
// generates, reports progress ("generate": outputs done of all) and checks `cancel` between
// tokens. UserError for bad requests: no model or prompt, models of different vocabularies, a
// model that does not generate text, chat without a template.
GenerateReport run_generate(const GenerateRequest& request, JobSink& sink, const CancellationToken& cancel,
                            const GenerateStream& stream = {});

}  // namespace ql
