// SPDX-License-Identifier: GPL-3.0-or-later
// The choice of the next token from one position's logits (sampling_settings.h), and the
// model's own distribution there for display (top alternatives). Plain C++ on float vectors.
//
// Greedy is the argmax (the first of equal maxima, as torch.argmax), after the repetition
// penalty when one is set. Sampling: the processors as transformers applies them
// (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper keeping every
// token tied with the k-th, TopPLogitsWarper on ascending sorted probabilities keeping at least
// one, MinPLogitsWarper), then a draw u in [0, 1) from splitmix64(seed, step) against the
// cumulative probabilities in token-id order (not torch.multinomial's stream: a sampled run is
// reproducible within QuantLab, not token-equal with transformers).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/generation/sampling_settings.h"

namespace ql {

struct TokenProbability {
    int64_t id = 0;
    double probability = 0;  // softmax of the raw logits (temperature 1, no processors)
};

class TokenSampler {
public:
    explicit TokenSampler(SamplingSettings settings);

    // The next token given logits [vocab] of the position and every id of the sequence so far
    // (for the repetition penalty). `step` numbers the draws of one generation (0, 1, ...).
    int64_t choose(const std::vector<float>& logits, const std::vector<int64_t>& context, int64_t step) const;

    const SamplingSettings& settings() const { return settings_; }

private:
    SamplingSettings settings_;
};

// The `count` most likely tokens under softmax(logits), most likely first (ties: lower id first).
std::vector<TokenProbability> top_probabilities(const std::vector<float>& logits, int64_t count);

// softmax(logits)[id] in float64.
double token_probability(const std::vector<float>& logits, int64_t id);

}  // namespace ql
