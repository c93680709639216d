// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/diagnosis/hidden_error.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

namespace ql {

at::Tensor token_relative_error(const at::Tensor& q, const at::Tensor& reference) {
    const at::Tensor r = reference.to(at::kDouble);
    const at::Tensor e2 = (q.to(at::kDouble) - r).pow(2).sum(-1);
    const at::Tensor r2 = r.pow(2).sum(-1);
    // 0 / 0 (both zero) is no error; x / 0 is +inf as it should be.
    return (e2 / r2).sqrt().masked_fill(e2.eq(0), 0.0);
}

void HiddenErrorSums::add(const at::Tensor& q, const at::Tensor& reference, const at::Tensor& mask) {
    const at::Tensor qd = q.to(at::kDouble), r = reference.to(at::kDouble);
    const at::Tensor m = mask.to(at::kDouble);
    const at::Tensor e2 = (qd - r).pow(2).sum(-1);
    const at::Tensor r2 = r.pow(2).sum(-1);
    const at::Tensor q2 = qd.pow(2).sum(-1);
    const at::Tensor dot = (qd * r).sum(-1);
    // cos = 1 for two zero vectors (identical), 0 when only one is zero.
    const at::Tensor denom = (q2 * r2).sqrt();
    const at::Tensor cos = at::where(denom.gt(0), dot / denom.clamp_min(std::numeric_limits<double>::min()),
                                     at::where(e2.eq(0), at::ones_like(dot), at::zeros_like(dot)));
    error2_ += (e2 * m).sum().item<double>();
    reference2_ += (r2 * m).sum().item<double>();
    cosine_ += (cos * m).sum().item<double>();
    tokens_ += mask.sum().item<int64_t>();
}

HiddenError HiddenErrorSums::result() const {
    HiddenError h;
    if (tokens_ == 0) return h;
    h.cosine = cosine_ / static_cast<double>(tokens_);
    if (error2_ == 0) {
        h.rel_l2 = 0;
        h.sqnr_db = std::numeric_limits<double>::infinity();
    } else {
        h.rel_l2 = reference2_ > 0 ? std::sqrt(error2_ / reference2_) : std::numeric_limits<double>::infinity();
        h.sqnr_db = 10.0 * std::log10(reference2_ / error2_);
    }
    return h;
}

}  // namespace ql
