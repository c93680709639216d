// SPDX-License-Identifier: GPL-3.0-or-later
// How to quantize one tensor: the format and its settings, as given on the CLI
// (`quantlab-cli fakequant --format ... --granularity ...`) or chosen in the GUI.
// Plain shared type (engine/core).
#pragma once

#include <cstdint>
#include <string>

namespace ql {

struct QuantOptions {
    std::string format;                  // a FormatInfo::name
    std::string granularity;             // tensor | channel | group (fp8, int); empty: per tensor
    int64_t group_size = 0;              // 0: the format's default (int groups 128, nf4 64)
    int axis = 0;                        // channel axis for granularity=channel (negative from the end)
    bool asymmetric = false;             // int formats
    bool double_quant = false;           // nf4
    std::string mx_scale = "floor";      // MX formats: floor | rceil
};

}  // namespace ql
