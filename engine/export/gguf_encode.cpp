// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_encode.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/core/errors.h"
#include "engine/io/gguf_kernel_types.h"
#include "kernels/gguf_blocks.h"
#include "kernels/gguf_q5_1.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql {

void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out, const float* importance) {
    const int64_t n = rows * cols;
    if (cols % ggml_block_size(type) != 0)
        throw std::invalid_argument(std::string("encode_gguf_tensor: ") + ggml_type_name(type) + " needs rows of whole blocks of " +
                                    std::to_string(ggml_block_size(type)) + ", got " + std::to_string(cols));
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
        case GgmlType::BF16:
            // ggml_compute_fp32_to_bf16: round to nearest even, NaN kept quiet.
            kernels::parallel_ranges(n, 1 << 16, 1, [&](int64_t b, int64_t e) {
                for (int64_t k = b; k < e; ++k) {
                    const uint16_t h = kernels::fp32_to_bf16_bits(x[k]);
                    std::memcpy(out + 2 * k, &h, 2);
                }
            });
            return;
        case GgmlType::Q5_1: kernels::gguf_q5_1_quantize(x, rows, cols, out, importance); return;
        default: {
            const kernels::GgufType k = *gguf_kernel_type(type);
            if (!importance && kernels::gguf_requires_importance(k))
                throw UserError(std::string("GGUF: ") + ggml_type_name(type) +
                                " needs an importance matrix (ggml_quantize_requires_imatrix): pass --imatrix");
            kernels::gguf_quantize(x, rows, cols, k, out, importance);
            return;
        }
    }
}

}  // namespace ql
