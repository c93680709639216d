// SPDX-License-Identifier: GPL-3.0-or-later
// The number formats QuantLab knows, as plain data for the CLI and the GUI (no LibTorch types).
// Plain shared header (engine/core): safe to include from ui/ and app/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

// Bit fields of one element code. Floats: sign/exponent/mantissa with a bias; integers: sign
// (two's complement) and magnitude bits; codebooks (NF4): index bits only.
struct ElementLayout {
    std::string name;        // "E2M1", "E4M3", "INT4", "NF4 index"
    int sign_bits = 0;
    int exponent_bits = 0;
    int mantissa_bits = 0;   // for integers: the value bits below the sign
    int bias = 0;
    bool is_float = false;
    bool is_integer = false;
    bool is_codebook = false;
    int code_offset = 0;     // unsigned codes that stand for (code - offset): GGUF Q4_0 8, Q5_0 16
};

struct FormatInfo {
    std::string name;         // the CLI name, e.g. "nvfp4"
    std::string title;        // display name, e.g. "NVFP4"
    std::string family;       // passthrough | fp8 | nvfp4 | nvfp4_e5m3 | mx | int | nf4 | gguf
    std::string summary;      // what it is, for users (one paragraph)
    std::string scale_rule;   // how the scale is computed, as a formula
    std::string source;       // the implementation whose numerics we follow
    std::vector<std::string> notes;  // differences between peers, NaN/Inf behaviour, ...

    ElementLayout element;
    int element_bits = 0;
    float element_max = 0;    // largest element magnitude before scaling
    // Every finite value an element code can take before scaling, ascending, signed, no
    // duplicates (for integers: the integer levels of the default symmetric mapping).
    std::vector<float> element_values;

    int64_t block_size = 0;   // elements sharing a scale; 0 = per tensor / channel / group
    std::string scale_type;   // "E4M3 per 16 elements + FP32 per tensor", "E8M0 per 32", ...
    double bits_per_element = 0;  // storage cost including scales (default settings)

    std::vector<std::string> granularities;  // e.g. {"tensor","channel","group"}; empty = fixed
    int64_t default_group_size = 0;
    bool supports_asymmetric = false;
    bool supports_double_quant = false;
    bool supports_scale_rule = false;  // MX: floor | rceil
    bool packs = true;                 // has a packed export layout
    bool requires_importance = false;  // quantizes only with importance weights (GGUF IQ2_XXS, IQ2_XS, IQ1_S)
};

// All formats in display order. Names are stable (scripts rely on them).
const std::vector<FormatInfo>& all_formats();

// The format named `name`; throws UserError naming the valid formats when unknown.
const FormatInfo& format_info(const std::string& name);

}  // namespace ql
