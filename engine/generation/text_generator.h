// SPDX-License-Identifier: GPL-3.0-or-later
// Autoregressive text generation with a KV cache (docs/GENERATION.md): the prompt's ids go
// through the model once (prefill, Model::forward_cached), then one token at a time, each
// chosen by a TokenSampler from the last position's logits, until an end id, a stop string,
// max_new_tokens or cancellation. Fake-quantized models generate through the same forward
// (weights quantized once for the whole generation: FrozenEffectiveWeights); a KV-cache
// quantizer's hook quantizes each new key and value before they are stored, so the cache holds
// what a quantized cache would.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/generation/sampling_settings.h"
#include "engine/generation/token_sampler.h"
#include "engine/jobs/job.h"
#include "engine/loading/model_text.h"
#include "engine/models/model.h"

namespace ql {

struct GenerationSettings {
    int64_t max_new_tokens = 128;
    SamplingSettings sampling;
    std::vector<int64_t> stop_ids;         // besides the model's own end ids (ModelText::end_ids)
    std::vector<std::string> stop_strings; // the text ends before the first occurrence of any
    int64_t alternatives = 5;              // most likely tokens kept per generated position
    bool keep_logits = false;              // GenerationResult::logits (divergence from a reference)
};

// UserError naming the setting when out of range (max_new_tokens < 1, an empty stop string, ...).
void validate_generation(const GenerationSettings& settings);

struct GeneratedToken {
    int64_t id = 0;
    std::string text;                          // what it added to the decoded text ("" for end ids)
    double probability = 0;                    // the model's softmax probability of this token
    std::vector<TokenProbability> alternatives;  // the most likely tokens at this position
};

struct GenerationResult {
    std::vector<int64_t> prompt_ids;
    std::vector<GeneratedToken> tokens;  // every generated token, the end token included
    std::string text;                    // the generated text, up to (not including) a stop string
    std::string stop_reason;             // "end" (an end id), "stop_string", "max_tokens"
    double prefill_seconds = 0;          // the prompt's forward and the first choice: time to first token
    double decode_seconds = 0;           // every later token
    int64_t kv_cache_bytes = 0;
    at::Tensor logits;                   // keep_logits: [tokens, vocab] float32 on the CPU, the logits
                                         // each generated token was chosen from

    // Generated tokens per second after the first (0 when fewer than two).
    double decode_tokens_per_second() const;
};

// Called after each generated token with the text that became final (may be "": a partial UTF-8
// character or a possible stop string is held back until known).
using TokenStream = std::function<void(const GeneratedToken& token, const std::string& new_text)>;

// Generates after `prompt_ids` (at least one id). `text` decodes tokens (required). The model must
// generate text (Model::generates_text) and hold prompt + max_new_tokens positions (GPT-2's
// absolute positions; Llama-family models have no limit). Runs under inference mode on the
// model's device. JobCancelled between tokens when `cancel` is set.
GenerationResult generate_text(Model& model, const ModelText& text, const std::vector<int64_t>& prompt_ids,
                               const GenerationSettings& settings, const TokenStream& stream,
                               const CancellationToken& cancel);

}  // namespace ql
