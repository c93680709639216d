// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_encode.h"

#include <cstring>

#include "kernels/gguf_blocks.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql {

void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out) {
    const int64_t n = rows * cols;
    switch (type) {
        case GgmlType::F32: std::memcpy(out, x, static_cast<size_t>(n) * 4); return;
        case GgmlType::F16:
            kernels::parallel_ranges(n, 1 << 16, 1, [&](int64_t b, int64_t e) {
                for (int64_t k = b; k < e; ++k) {
                    const uint16_t h = kernels::fp32_to_fp16_bits(x[k]);
                    std::memcpy(out + 2 * k, &h, 2);
                }
            });
            return;
        case GgmlType::Q8_0: kernels::gguf_quantize(x, rows, cols, kernels::GgufType::Q8_0, out); return;
        case GgmlType::Q4_0: kernels::gguf_quantize(x, rows, cols, kernels::GgufType::Q4_0, out); return;
        case GgmlType::Q4_1: kernels::gguf_quantize(x, rows, cols, kernels::GgufType::Q4_1, out); return;
        case GgmlType::Q5_0: kernels::gguf_quantize(x, rows, cols, kernels::GgufType::Q5_0, out); return;
        case GgmlType::MXFP4: kernels::gguf_quantize(x, rows, cols, kernels::GgufType::MXFP4, out); return;
    }
}

}  // namespace ql
