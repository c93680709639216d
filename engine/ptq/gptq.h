// SPDX-License-Identifier: GPL-3.0-or-later
// GPTQ (Frantar, Ashkboos, Hoefler, Alistarh 2022, "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers", Algorithm 1) for one Linear weight in any QuantLab format
// but GGUF. Follows the reference implementation IST-DASLab/gptq gptq.py (GPTQ.add_batch and
// GPTQ.fasterquant): dead inputs, dampening, the upper Cholesky factor of H^-1, lazy batch
// blocks, act_order with static groups. The grid's scales are fixed from the original weight
// (engine/ptq/weight_grid.h), as Model Optimizer's GPTQ does with its calibrated static amax.
// Where this differs from the reference, and why:
// - Scales always come from the weight as given ("static groups" with or without act_order);
//   the reference refits a group's scale to the partly updated weights unless static_groups is
//   set. Fixed scales make the result re-quantize to itself and match Model Optimizer.
// - Dead inputs are zeroed after the scales are taken, for the same reason (the reference
//   computes static groups after zeroing them).
// - A failed Cholesky factorisation is retried with 10x the dampening (the reference raises,
//   Model Optimizer silently falls back to the identity, i.e. round-to-nearest).
// - act_order breaks ties in diag(H) by column index (a stable sort), so results are
//   deterministic.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/formats/format_codec.h"
#include "engine/jobs/job.h"

namespace ql {

// The layer Hessian of the GPTQ objective ||X W^T - X Q^T||^2, H = (2/n) * sum over calibration
// rows x of x x^T, accumulated as the reference's add_batch does for a batch of b rows:
//     H *= n / (n + b);  n += b;  x *= sqrt(2 / n);  H += x^T x
// in float32 (the reference's dtype).
class HessianAccumulator {
public:
    explicit HessianAccumulator(int64_t in_features);  // UserError for in_features < 1

    // x: [..., in_features], any floating dtype; every leading index is one row. UserError for
    // another last dimension or non-finite values. Zero rows is a no-op.
    void add(const at::Tensor& x);

    const at::Tensor& hessian() const { return hessian_; }  // [in, in] float32, symmetric
    int64_t rows() const { return rows_; }
    int64_t in_features() const { return in_features_; }

private:
    int64_t in_features_;
    int64_t rows_ = 0;
    at::Tensor hessian_;
};

struct GptqOptions {
    int64_t block_size = 128;    // lazy batch update width B (columns), >= 1
    double damp_percent = 0.01;  // lambda = damp_percent * mean(diag(H)), >= 0
    bool act_order = false;      // process columns by descending diag(H)
};

struct GptqResult {
    at::Tensor weight;         // [out, in] float32; every value is on the WeightGrid of the input weight
    double proxy_loss = 0;     // the reference's "error": sum over columns of (w - q)^2 / d^2 / 2,
                               // d the diagonal of the Cholesky factor of H^-1
    int64_t dead_columns = 0;  // inputs with H_ii == 0: their weights are set to 0
    double damp_percent = 0;   // the dampening actually used (larger than asked after a retry)
};

// weight: [out, in] floating point, finite (not modified); hessian: [in, in], finite, symmetric
// positive semi-definite (HessianAccumulator::hessian()). UserError for shapes that do not match,
// non-finite inputs, bad options, GGUF formats, or a Hessian whose Cholesky factorisation fails
// even after raising the dampening 10x four times. Checks `cancel` before every block of
// columns (JobCancelled). Runs on LibTorch's intra-op threads.
GptqResult gptq_quantize(const at::Tensor& weight, const at::Tensor& hessian, const QuantSpec& spec,
                         const GptqOptions& options, const CancellationToken& cancel);

}  // namespace ql
