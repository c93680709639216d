// SPDX-License-Identifier: GPL-3.0-or-later
// How one weight matrix fits one quantizer (engine/core/layer_stats_types.h FormatFit): clipping
// against each block's representable range, weight error, the decoded block scales and the grid
// of the largest block. The output SQNR needs the layer (Linear or Conv2d), so the caller adds it
// (engine/stats/layer_stats_job.cpp, format_fit() in format_fit.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/layer_stats_types.h"
#include "engine/formats/format_codec.h"

namespace ql {

// The settings layer statistics use for `format` when no recipe chose them: INT8 per channel
// (axis 0, Model Optimizer's INT8 weights), INT4/3/2 groups of 128 where 128 divides `cols`
// (else per channel), FP8 per tensor, every block format its fixed blocks.
QuantOptions default_weight_options(const std::string& format, int64_t cols);
// Inputs: per tensor for FP8 / INT, the fixed blocks otherwise.
QuantOptions default_input_options(const std::string& format);
// A short form of a spec: "int4 group 128", "int8 channel", "fp8_e4m3 tensor", "nvfp4".
std::string spec_description(const QuantSpec& spec);

// Everything of FormatFit but the output SQNRs and input clipping (left NaN). `quantized` gets
// Q(W) (rows * cols floats) for the caller's output SQNR. w: [rows, cols] row-major.
FormatFit fit_weight(const float* w, int64_t rows, int64_t cols, const QuantSpec& spec, int bins,
                     std::vector<float>& quantized);

// Fraction of the values of x (`shape`, last dimension = blocks' axis) beyond the representable
// range of their block under `spec` (its fixed_amax honoured), as FormatFit.clipped_fraction.
double clipped_fraction(const float* x, const std::vector<int64_t>& shape, const QuantSpec& spec);

// 10 log10(sum y^2 / sum (y - yq)^2) in double; +inf when yq == y (engine/ptq/ptq_pipeline.cpp).
double sqnr_db(const double signal, const double noise);

}  // namespace ql
