// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/diagnosis/token_divergence.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>

#include "engine/data/dataset.h"

namespace ql {

TokenScores score_tokens(const at::Tensor& fp_logits, const at::Tensor& q_logits, const at::Tensor& targets) {
    TokenScores s;
    const at::Tensor lp = at::log_softmax(fp_logits.to(at::kDouble), -1);
    const at::Tensor lq = at::log_softmax(q_logits.to(at::kDouble), -1);
    s.scored = targets.ne(Dataset::kIgnoreIndex);
    // KL(FP || Q) = sum_v p(v) (log p(v) - log q(v)); terms with p = 0 are exactly 0.
    s.kl = lp.exp().mul(lp.sub(lq)).sum(-1).clamp_min(0.0).masked_fill(~s.scored, 0.0);
    const auto fp_max = lp.max(-1);
    const auto q_max = lq.max(-1);
    s.fp_top1 = std::get<1>(fp_max);
    s.q_top1 = std::get<1>(q_max);
    s.p_fp_top1 = std::get<0>(fp_max).exp();
    s.p_q_top1 = std::get<0>(q_max).exp();
    const at::Tensor safe = targets.masked_fill(~s.scored, 0).unsqueeze(-1);
    const at::Tensor lp_t = lp.gather(-1, safe).squeeze(-1).masked_fill(~s.scored, 0.0);
    const at::Tensor lq_t = lq.gather(-1, safe).squeeze(-1).masked_fill(~s.scored, 0.0);
    s.nll_fp = lp_t.neg();
    s.nll_q = lq_t.neg();
    s.p_fp_target = lp_t.exp().masked_fill(~s.scored, 0.0);
    s.p_q_target = lq_t.exp().masked_fill(~s.scored, 0.0);
    return s;
}

void TokenDivergenceAccumulator::add(const TokenScores& s) {
    const at::Tensor m = s.scored.reshape({-1});
    auto take = [&](const at::Tensor& t) {
        const at::Tensor v = t.reshape({-1}).masked_select(m).to(at::kCPU, at::kDouble).contiguous();
        return std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
    };
    const std::vector<double> kl = take(s.kl), pf = take(s.p_fp_target), pq = take(s.p_q_target), nf = take(s.nll_fp),
                              nq = take(s.nll_q), same = take(s.fp_top1.eq(s.q_top1));
    for (size_t i = 0; i < kl.size(); ++i) add_token(kl[i], same[i] != 0, pf[i], pq[i], nf[i], nq[i]);
}

void TokenDivergenceAccumulator::add_token(double kl, bool same_top1, double p_fp_target, double p_q_target, double nll_fp,
                                           double nll_q) {
    kl_.push_back(kl);
    const double dp = p_q_target - p_fp_target;
    sum_delta_p_ += dp;
    sum_delta_p2_ += dp * dp;
    sum_nll_fp_ += nll_fp;
    sum_nll_q_ += nll_q;
    same_top1_ += same_top1 ? 1 : 0;
}

void TokenDivergenceAccumulator::merge(const TokenDivergenceAccumulator& o) {
    kl_.insert(kl_.end(), o.kl_.begin(), o.kl_.end());
    sum_delta_p_ += o.sum_delta_p_;
    sum_delta_p2_ += o.sum_delta_p2_;
    sum_nll_fp_ += o.sum_nll_fp_;
    sum_nll_q_ += o.sum_nll_q_;
    same_top1_ += o.same_top1_;
}

double sorted_percentile(const std::vector<double>& v, double fraction) {
    if (v.empty()) return 0;
    if (fraction <= 0) return v.front();
    if (fraction >= 1) return v.back();
    double p = fraction * static_cast<double>(v.size() - 1);
    const size_t ip = static_cast<size_t>(p);
    p -= static_cast<double>(ip);
    return (1 - p) * v[ip] + p * v[std::min(ip + 1, v.size() - 1)];
}

TokenDivergenceSummary TokenDivergenceAccumulator::summary() const {
    TokenDivergenceSummary s;
    s.tokens = count();
    if (kl_.empty()) return s;
    std::vector<double> sorted = kl_;
    std::sort(sorted.begin(), sorted.end());
    const double n = static_cast<double>(sorted.size());
    double sum = 0;
    for (double v : kl_) sum += v;
    s.kl_mean = sum / n;
    // llama.cpp averages the two middle values of an even count: the 0.5 percentile's interpolation.
    s.kl_median = sorted_percentile(sorted, 0.5);
    s.kl_p90 = sorted_percentile(sorted, 0.90);
    s.kl_p95 = sorted_percentile(sorted, 0.95);
    s.kl_p99 = sorted_percentile(sorted, 0.99);
    s.kl_max = sorted.back();
    s.same_top1 = static_cast<double>(same_top1_) / n;
    s.delta_p_mean = sum_delta_p_ / n;
    s.rms_delta_p = std::sqrt(sum_delta_p2_ / n);
    s.ppl_fp = std::exp(sum_nll_fp_ / n);
    s.ppl_q = std::exp(sum_nll_q_ / n);
    s.delta_ppl = s.ppl_q - s.ppl_fp;
    return s;
}

}  // namespace ql
