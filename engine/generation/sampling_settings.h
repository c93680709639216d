// SPDX-License-Identifier: GPL-3.0-or-later
// How the next token is chosen from a model's logits (docs/GENERATION.md): greedy, or a seeded
// draw after transformers' logits processors in transformers' order (generation/utils.py
// _get_logits_processor): repetition penalty, then temperature, top-k, top-p, min-p. Plain C++.
#pragma once

#include <cstdint>
#include <string>

namespace ql {

struct SamplingSettings {
    double temperature = 0.0;         // 0: greedy (argmax); > 0: sample at this temperature
    int64_t top_k = 0;                // keep the k most likely tokens (0: all)
    double top_p = 1.0;               // keep the smallest set whose probability reaches p (1: all)
    double min_p = 0.0;               // drop tokens below min_p x the top token's probability (0: none)
    double repetition_penalty = 1.0;  // CTRL's penalty on tokens already in the sequence (1: none)
    uint64_t seed = 0;                // the draws of a sampled run

    bool greedy() const { return temperature <= 0.0; }
};

// UserError naming the setting ("temperature", "top_p" ...) when a value is out of range.
void validate_sampling(const SamplingSettings& settings);

// One line: "greedy" or "sampled: temperature 0.7, top-p 0.9, seed 1" (manifests, headers).
std::string describe_sampling(const SamplingSettings& settings);

}  // namespace ql
