// SPDX-License-Identifier: GPL-3.0-or-later
// A step-by-step account of quantizing one block of values, for teaching views (the Format
// Explorer): every number comes from the same kernels the engine uses. Facade header.
#pragma once

#include <string>
#include <vector>

#include "engine/core/quant_options.h"

namespace ql {

struct WalkthroughStep {
    std::string label;    // "Block amax"
    std::string formula;  // "max |x_i|"
    std::string result;   // "3.1416"
};

struct BlockWalkthrough {
    std::string format;
    std::vector<float> input;        // the block as given
    std::vector<float> scaled;       // each value divided by its scale: the element's domain
    std::vector<float> output;       // dequantized values
    std::vector<unsigned> codes;     // element codes
    std::vector<std::string> code_bits;  // codes in binary, fields separated: "1 01 1"
    double scale = 0;                // the multiplier applied to element values
    double global_scale = 0;         // NVFP4/FP8 tensor scale where there is one
    std::vector<float> grid;         // representable values after scaling (for plotting)
    std::vector<WalkthroughStep> steps;
    double mse = 0;
};

// `block` is one block of the format at most (16 for NVFP4, 32 for MX and GGUF, 64 for NF4,
// the group size for INT groups; any length for per-tensor formats); a shorter block is padded
// as the format pads. A longer one is a UserError. `tensor_amax` sets the per-tensor scale for NVFP4 / FP8 / per-
// tensor INT; when NaN it is the block's own amax.
BlockWalkthrough explain_block(const std::vector<float>& block, const QuantOptions& options,
                               float tensor_amax);

}  // namespace ql
