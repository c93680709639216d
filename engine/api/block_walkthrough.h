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

// GGUF K-quants and IQ4 (super-blocks): one sub-block of the super-block.
struct WalkthroughSubBlock {
    int first = 0, length = 0;                // its elements in the block
    double search_scale = 0, search_min = 0;  // what ggml's search found for it (float)
    int stored_scale = 0, stored_min = 0;     // the 4/6/8-bit integers the block stores
    double scale = 0, min = 0;                // decoded: value = scale * f(code) - min
    double mse = 0;                           // over its finite elements
};

// One candidate of a sub-block's search (kernels/gguf_kquant_trace.h).
struct WalkthroughSearchStep {
    int step = 0;
    double inverse_scale = 0, scale = 0, min = 0, objective = 0;
    bool accepted = false;
};

struct SuperBlockWalkthrough {
    bool present = false;          // only for the super-block formats
    double d = 0, dmin = 0;        // the fp16 super scale and super min
    bool has_min = false;
    int scale_bits = 0;            // bits of a stored sub-block scale
    int sub_block_length = 0;      // 16 or 32
    std::vector<WalkthroughSubBlock> sub_blocks;
    int search_sub_block = 0;      // the sub-block whose search is listed below
    std::string search_method, search_objective;
    std::vector<WalkthroughSearchStep> search;
};

struct BlockWalkthrough {
    std::string format;
    std::vector<float> input;        // the block as given
    std::vector<float> scaled;       // each value divided by its scale: the element's domain
    std::vector<float> output;       // dequantized values
    std::vector<bool> kept;          // LLM.int8(): values left unquantized (outlier columns); else empty
    std::vector<unsigned> codes;     // element codes
    std::vector<std::string> code_bits;  // codes in binary, fields separated: "1 01 1"
    double scale = 0;                // the multiplier applied to element values
    double global_scale = 0;         // NVFP4/FP8 tensor scale where there is one
    std::vector<float> grid;         // representable values after scaling (for plotting)
    std::vector<WalkthroughStep> steps;
    double mse = 0;
    SuperBlockWalkthrough super_block;  // GGUF K-quants / IQ4; `grid` is then search_sub_block's grid
};

// `block` is one block of the format at most (16 for NVFP4, 32 for MX and GGUF, 64 for NF4,
// 256 for the GGUF K-quants and IQ4_XS, the group size for INT groups; any length for per-tensor
// formats); a shorter block is padded as the format pads. A longer one is a UserError.
// `tensor_amax` sets the per-tensor scale for NVFP4 / FP8 / per-tensor INT; when NaN it is the
// block's own amax. `sub_block`: for the super-block formats, the sub-block whose search is
// traced candidate by candidate (and whose grid `grid` shows); clamped to the block.
BlockWalkthrough explain_block(const std::vector<float>& block, const QuantOptions& options,
                               float tensor_amax, int sub_block = 0);

}  // namespace ql
