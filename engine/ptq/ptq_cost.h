// SPDX-License-Identifier: GPL-3.0-or-later
// How much work post-training quantization is, counted in floating-point operations from the
// model's shapes, the recipe and the data (nothing is run): the layer-by-layer pipeline's
// progress units (engine/ptq/ptq_pipeline.h) and the time half of the pre-flight estimate
// (engine/ptq/ptq_estimate.h), which divides it by a rate measured on this machine.
//
// Counted: every Linear of a block, 2 * out * in per token; eager attention, 4 * heads *
// head_dim * T^2 per sequence (scores and their product with V, computed for every position as
// transformers' eager attention does); GPTQ's Hessians, 2 * in^2 per token and distinct input;
// its solve, 1.5 * in^3 (Cholesky, inverse, Cholesky) + 2 * out * in^2 (the block updates); AWQ's
// search, (grid + clip grid) forwards of the sampled rows; the error report, 3 forwards of them.
// Element-wise work, norms and RoPE are left out (a few percent).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/quant/quantized_model.h"

namespace ql {

// One part of the layer-by-layer run (a block, or the layers outside blocks).
struct PtqBlockWork {
    double pass_per_sample = 0;  // one sample through the part, observers included (averaged over passes)
    int64_t passes = 0;          // passes over the data
    double algorithms = 0;       // GPTQ / AWQ / clip search of its layers
    double measure = 0;          // the error report of its layers
    double total(int64_t samples) const {
        return pass_per_sample * static_cast<double>(passes * samples) + algorithms + measure;
    }
};

struct PtqWorkPlan {
    int64_t samples = 0, tokens = 0;
    double embed_per_sample = 0;
    std::vector<PtqBlockWork> parts;  // blocks, then the layers outside blocks
    double total() const;
};

// The plan for `samples` sequences of `tokens` through q's model with q's recipe, layer by layer.
PtqWorkPlan ptq_work_plan(const QuantizedModel& q, int64_t tokens, int64_t samples, int64_t sample_rows = 2048);

// GPTQ's solve for one layer's weight.
double gptq_layer_work(const QuantizableLayer& layer);

// The dtype the layer-by-layer pipeline keeps activations in between blocks: BF16 when the model
// keeps its block weights in a 16-bit type (BF16 or F16: BF16 has F16's precision need and
// float32's range), float32 otherwise.
at::ScalarType ptq_stream_dtype(const Model& model);

}  // namespace ql
