// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_encode.h"

#include <cstring>

#include "engine/core/errors.h"
#include "kernels/gguf_blocks.h"
#include "kernels/gguf_q5_1.h"
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
        case GgmlType::Q5_1: kernels::gguf_q5_1_quantize(x, rows, cols, out); return;
        case GgmlType::BF16:
            // ggml_compute_fp32_to_bf16: round to nearest even, NaN kept quiet.
            kernels::parallel_ranges(n, 1 << 16, 1, [&](int64_t b, int64_t e) {
                for (int64_t k = b; k < e; ++k) {
                    const uint16_t h = kernels::fp32_to_bf16_bits(x[k]);
                    std::memcpy(out + 2 * k, &h, 2);
                }
            });
            return;
        default: break;
    }
    throw UserError(std::string("GGUF: writing type ") + ggml_type_name(type) + " is not available in this build");
}

void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out, const float* importance,
                        int64_t n) {
    const bool ignores = type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 ||
                         type == GgmlType::Q8_0 || type == GgmlType::MXFP4;
    if (!importance || ignores) return encode_gguf_tensor(x, rows, cols, type, out);
    if (n <= 0 || n % cols != 0) throw UserError("GGUF: importance of " + std::to_string(n) + " values for rows of " + std::to_string(cols));
    throw UserError(std::string("GGUF: importance-weighted ") + ggml_type_name(type) + " is not available in this build");
}

}  // namespace ql
