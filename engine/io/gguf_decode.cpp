// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/gguf_decode.h"

#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/gguf_kernel_types.h"
#include "kernels/gguf_blocks.h"
#include "kernels/gguf_q5_1.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql {
namespace {

template <class Convert>
void convert_16bit(const uint8_t* p, int64_t n, float* out, const Convert& convert) {
    kernels::parallel_ranges(n, 1 << 16, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
            uint16_t h;
            std::memcpy(&h, p + 2 * k, 2);
            out[k] = convert(h);
        }
    });
}

}  // namespace

bool gguf_type_decodable(GgmlType type) {
    return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || type == GgmlType::Q5_1 ||
           gguf_kernel_type(type).has_value();
}

void decode_gguf_tensor(const uint8_t* p, int64_t rows, int64_t cols, GgmlType type, float* out, const std::string& what) {
    const int64_t n = rows * cols;
    switch (type) {
        case GgmlType::F32: std::memcpy(out, p, static_cast<size_t>(n) * 4); return;
        case GgmlType::F16: convert_16bit(p, n, out, kernels::fp16_bits_to_fp32); return;
        case GgmlType::BF16: convert_16bit(p, n, out, kernels::bf16_bits_to_fp32); return;
        case GgmlType::Q5_1: kernels::gguf_q5_1_dequantize(p, rows, cols, out); return;
        default: break;
    }
    if (const auto k = gguf_kernel_type(type)) {
        kernels::gguf_dequantize(p, rows, cols, *k, out);
        return;
    }
    throw UserError(what + ": type " + ggml_type_name(type) + " cannot be decoded by this build of QuantLab");
}

std::vector<float> gguf_block_scales(const uint8_t* data, GgmlType type, int64_t numel) {
    if (type == GgmlType::Q5_1) {
        const int64_t nblocks = numel / 32;
        std::vector<float> d(static_cast<size_t>(nblocks));
        for (int64_t b = 0; b < nblocks; ++b) {
            uint16_t h;
            std::memcpy(&h, data + b * kernels::kGgufQ5_1BlockBytes, 2);
            d[static_cast<size_t>(b)] = kernels::fp16_bits_to_fp32(h);
        }
        return d;
    }
    const auto k = gguf_kernel_type(type);
    if (!k) return {};
    // gguf_unpack: per sub-block the scale (and, for types with a minimum, the min after it).
    const int64_t nblocks = numel / kernels::gguf_block_elements(*k);
    const int per_block = kernels::gguf_scales_per_block(*k);
    std::vector<uint8_t> codes(static_cast<size_t>(numel));
    std::vector<float> scales(static_cast<size_t>(nblocks * per_block));
    kernels::gguf_unpack(data, nblocks, *k, codes.data(), scales.data());
    if (!kernels::gguf_has_min(*k)) return scales;
    std::vector<float> d;
    d.reserve(scales.size() / 2);
    for (size_t i = 0; i < scales.size(); i += 2) d.push_back(scales[i]);
    return d;
}

}  // namespace ql
