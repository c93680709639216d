// SPDX-License-Identifier: GPL-3.0-or-later
// The fake-quantization configurations the benchmarks time (FakeQuant/<name>, format_bench.cpp)
// and the instruction probe counts (probe/kernel_probe.cpp): every fused kernel family with the
// settings recipes use. Names without a suffix are the format's defaults as the CLI resolves them
// (int8/int4: symmetric groups of 128, as the benchmarks have always measured them).
#pragma once

#include <string>
#include <vector>

#include "engine/core/quant_options.h"

namespace ql::bench {

struct FakeQuantConfig {
    std::string name;
    QuantOptions options;
    bool gguf = false;  // the GGUF fake-quant paths (kernels/gguf_*), timed but not part of the fused-kernel targets
};

inline std::vector<FakeQuantConfig> fake_quant_configs() {
    auto opt = [](std::string format, std::string granularity = "", int64_t group = 0, bool asym = false,
                  bool double_quant = false) {
        QuantOptions o;
        o.format = std::move(format);
        o.granularity = std::move(granularity);
        o.group_size = group;
        o.asymmetric = asym;
        o.double_quant = double_quant;
        return o;
    };
    return {
        {"nvfp4", opt("nvfp4")},
        {"mxfp4", opt("mxfp4")},
        {"mxfp6_e2m3", opt("mxfp6_e2m3")},
        {"mxfp6_e3m2", opt("mxfp6_e3m2")},
        {"mxfp8_e4m3", opt("mxfp8_e4m3")},
        {"mxfp8_e5m2", opt("mxfp8_e5m2")},
        {"mxint8", opt("mxint8")},
        {"fp8_e4m3", opt("fp8_e4m3")},
        {"fp8_e5m2", opt("fp8_e5m2")},
        {"fp8_e4m3_channel", opt("fp8_e4m3", "channel")},
        {"int8", opt("int8", "group", 128)},
        {"int4", opt("int4", "group", 128)},
        {"int4_asym", opt("int4", "group", 128, true)},
        {"int8_channel", opt("int8", "channel")},
        {"nf4", opt("nf4")},
        {"nf4_double", opt("nf4", "", 0, false, true)},
        {"bf16", opt("bf16")},
        {"fp16", opt("fp16")},
        {"gguf_q4_0", opt("gguf_q4_0"), true},
        {"gguf_q8_0", opt("gguf_q8_0"), true},
        {"gguf_mxfp4", opt("gguf_mxfp4"), true},
    };
}

}  // namespace ql::bench
