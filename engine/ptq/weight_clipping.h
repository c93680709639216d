// SPDX-License-Identifier: GPL-3.0-or-later
// QuantLab's MSE scale search for weights, plain or importance-weighted (the recipe's weight
// calibrators "mse" and "imatrix_mse", docs/RECIPES.md "Weight calibrators"): every scale cell of
// the weight (the tensor, a channel, a group, a block) gets the clipping multiplier m from a grid
// that minimises
//     sum over the cell's elements (i, j) of  imp_j * (W_ij - Q_m(W)_ij)^2
// where Q_m quantizes W with the cell's scale computed from m * W instead of W (so m < 1 clips the
// cell at m times its own range) and imp_j is the importance of input column j: the imatrix's
// mean squared activation (llama-imatrix in_sum2 / count) for "imatrix_mse", 1 for "mse". The
// same quantity llama.cpp's importance-weighted searches minimise for GGUF types, for every
// other format. Q_m is WeightGrid (engine/ptq/weight_grid.h) with reference m * W, so each
// element is rounded by the format's own kernel functions and the result is on the format's grid:
// the pinned weight re-quantizes to itself. NVFP4 keeps the weight's own global scale (only the
// block scales move); MX scales move by whole binades. Cells are independent, so one pass per
// candidate m finds every cell's best; ties keep the larger m (the first candidate, m = 1 = plain
// round-to-nearest, wins unless a smaller one is strictly better).
// Formats: those WeightGrid supports (INT, FP8, NVFP4, MX, NF4 without double quantization).
// GGUF formats take the importance inside their own searches instead (llama.cpp's quant_weights).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "engine/formats/format_codec.h"

namespace ql {

struct WeightClipping {
    at::Tensor quantized;           // [out, in] float32 on the format's grid
    std::vector<float> multipliers; // the chosen m per cell (cell order: row-major over (row, block))
    double error_before = 0;        // the weighted squared error with m = 1 (round to nearest)
    double error_after = 0;         // with the chosen multipliers
};

// The multipliers tried: 1, 0.98, ..., 0.50 (26 values).
std::vector<float> clipping_candidates();

// w: [out, in] float32; spec: its weight spec; importance: `in` non-negative finite values, or
// empty for the plain search. UserError for a format WeightGrid cannot hold, an importance of the
// wrong length or with negative / non-finite values.
WeightClipping search_weight_clipping(const at::Tensor& w, const QuantSpec& spec, const std::vector<float>& importance);

}  // namespace ql
