// SPDX-License-Identifier: GPL-3.0-or-later
// The error of a hidden state against its FP reference (engine/core/divergence_report.h
// HiddenError), accumulated over batches and the scored positions, and per token.
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/core/divergence_report.h"

namespace ql {

// Per token of a [B, T, H] pair (q, reference): relative L2 error |q - r| / |r|, float64 [B, T]
// (0 where both are zero, +inf where only r is).
at::Tensor token_relative_error(const at::Tensor& q, const at::Tensor& reference);

class HiddenErrorSums {
public:
    // q, reference [B, T, H] (or [..., H]); mask bool [B, T]: the positions counted.
    void add(const at::Tensor& q, const at::Tensor& reference, const at::Tensor& mask);
    HiddenError result() const;
    bool empty() const { return tokens_ == 0; }

private:
    double error2_ = 0, reference2_ = 0, cosine_ = 0;
    int64_t tokens_ = 0;
};

}  // namespace ql
