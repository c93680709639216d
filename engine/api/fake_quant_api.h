// SPDX-License-Identifier: GPL-3.0-or-later
// Fake-quantize and encode a float32 array in any format: the engine behind
// `quantlab-cli fakequant` (contract in shared/design/FORMATS.md, end) and the GUI's previews.
// Facade header: plain types only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/nd_array.h"
#include "engine/core/quant_options.h"

namespace ql {

struct FakeQuantRequest {
    NdArray input;           // float32, any shape
    QuantOptions options;
    bool want_codes = false;
    bool want_scales = false;
    bool want_packed = false;
    // GGUF formats: per-column importance (an imatrix row: one float per element of the last
    // dimension, finite and >= 0); empty for the plain search. importance_source names it in errors.
    std::vector<float> importance;
    std::string importance_source = "importance";
};

struct FakeQuantResult {
    NdArray values;                     // float32, the input's shape
    std::optional<NdArray> codes;       // unpacked element codes (uint8; int8 for signed ints)
    std::optional<NdArray> scales;      // decoded scales, float32
    std::optional<NdArray> packed;      // bytes as the export formats store them
    std::optional<float> global_scale;  // NVFP4: amax / (6 * 448)
    std::vector<float> zero_points;     // asymmetric integers, one per scale
    std::optional<float> offset;        // NF4 double quantization: mean of the absmax
    std::vector<int64_t> outlier_columns;  // llm_int8: the columns kept in full precision
    std::string format;                 // resolved settings, for --json
    std::string granularity;
    int64_t block_size = 0;
    int axis = 0;
    double mse = 0;                     // mean squared error over finite elements
    double sqnr_db = 0;                 // 10 log10(signal power / noise power); +inf when exact
    int64_t nonfinite_inputs = 0;       // NaN or Inf elements in the input
};

// Validates the options against the input (unknown format or option, group size not dividing
// the dimension, axis out of range, packing that needs divisibility) and throws UserError with a
// one-line message naming the problem.
FakeQuantResult run_fake_quant(const FakeQuantRequest& request);

}  // namespace ql
