// SPDX-License-Identifier: GPL-3.0-or-later
// Per-token divergence of a quantized model from its FP reference, and the summary statistics
// llama.cpp's `llama-perplexity --kl-divergence` prints (tools/perplexity/perplexity.cpp,
// kl_divergence()): KL mean / median / percentiles / max, "same top p", delta p and its RMS,
// and both perplexities. Used by `eval --teacher` and by the divergence job.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/core/divergence_report.h"

namespace ql {

// Per position of logits [B, T, V] against targets [B, T] (kIgnoreIndex = unscored), all
// [B, T]: kl float64 KL(FP || Q); fp_top1 / q_top1 int64 argmax; p_fp_top1 / p_q_top1 each
// model's probability of its own top-1; p_fp_target / p_q_target float64 the target's
// probability (0 where unscored); nll_fp / nll_q float64; scored bool. Computed in float64.
struct TokenScores {
    at::Tensor kl, fp_top1, q_top1, p_fp_top1, p_q_top1, p_fp_target, p_q_target, nll_fp, nll_q, scored;
};
TokenScores score_tokens(const at::Tensor& fp_logits, const at::Tensor& q_logits, const at::Tensor& targets);

// Collects the scored tokens of many batches and summarises them.
class TokenDivergenceAccumulator {
public:
    void add(const TokenScores& scores);
    // The same from values already computed elsewhere (the evaluator's float32 KL), per scored
    // token: kl, whether the top-1s agree, the target's probabilities, both NLLs.
    void add_token(double kl, bool same_top1, double p_fp_target, double p_q_target, double nll_fp, double nll_q);
    void merge(const TokenDivergenceAccumulator& other);
    int64_t count() const { return static_cast<int64_t>(kl_.size()); }
    // Zero tokens: every field 0 (tokens = 0).
    TokenDivergenceSummary summary() const;

private:
    std::vector<double> kl_;
    double sum_delta_p_ = 0, sum_delta_p2_ = 0, sum_nll_fp_ = 0, sum_nll_q_ = 0;
    int64_t same_top1_ = 0;
};

// llama.cpp's percentile of sorted values: linear interpolation at p = fraction * (n - 1)
// (numpy.percentile's default "linear" method). Empty: 0.
double sorted_percentile(const std::vector<double>& sorted, double fraction);

}  // namespace ql
