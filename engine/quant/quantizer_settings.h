// SPDX-License-Identifier: GPL-3.0-or-later
// The settings of one tensor quantizer (a layer's weight or input quantizer), as a recipe's
// quant_cfg entry writes them (docs/RECIPES.md). Plain C++ (facade-safe).
#pragma once

#include <string>

#include "engine/core/quant_options.h"

namespace ql {

struct QuantizerSettings {
    bool enabled = false;
    QuantOptions options;          // format, granularity, group size, axis, asym, double quant, MX rule
    // Activations only. Static (false): the per-tensor amax (NVFP4: the global scale; MX has none)
    // is calibrated once and fixed. Dynamic (true): every batch computes its own scales.
    bool dynamic = false;
    std::string calibrator = "max";  // static activations: max | percentile | mse | entropy
    double percentile = 99.99;       // for the percentile calibrator, in percent
};

// Short human form: "nvfp4", "int4 group 128 asym", "fp8_e4m3 static (max)", "off".
std::string describe(const QuantizerSettings& s, bool is_input);

}  // namespace ql
