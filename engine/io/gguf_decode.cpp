// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/gguf_decode.h"

#include <cstring>

#include "engine/core/errors.h"
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
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::MXFP4: return true;
        default: return false;
    }
}

void decode_gguf_tensor(const uint8_t* p, int64_t rows, int64_t cols, GgmlType type, float* out, const std::string& what) {
    const int64_t n = rows * cols;
    switch (type) {
        case GgmlType::F32: std::memcpy(out, p, static_cast<size_t>(n) * 4); return;
        case GgmlType::F16: convert_16bit(p, n, out, kernels::fp16_bits_to_fp32); return;
        case GgmlType::BF16: convert_16bit(p, n, out, kernels::bf16_bits_to_fp32); return;
        case GgmlType::Q5_1: kernels::gguf_q5_1_dequantize(p, rows, cols, out); return;
        case GgmlType::Q4_0: kernels::gguf_dequantize(p, rows, cols, kernels::GgufType::Q4_0, out); return;
        case GgmlType::Q4_1: kernels::gguf_dequantize(p, rows, cols, kernels::GgufType::Q4_1, out); return;
        case GgmlType::Q5_0: kernels::gguf_dequantize(p, rows, cols, kernels::GgufType::Q5_0, out); return;
        case GgmlType::Q8_0: kernels::gguf_dequantize(p, rows, cols, kernels::GgufType::Q8_0, out); return;
        case GgmlType::MXFP4: kernels::gguf_dequantize(p, rows, cols, kernels::GgufType::MXFP4, out); return;
        default: break;
    }
    throw UserError(what + ": type " + ggml_type_name(type) + " cannot be decoded by this build of QuantLab");
}

std::vector<float> gguf_block_scales(const uint8_t* data, GgmlType type, int64_t numel) {
    const auto legacy = [&](kernels::GgufType t) {
        const int64_t nblocks = numel / kernels::kGgufBlock;
        std::vector<uint8_t> codes(static_cast<size_t>(numel));
        std::vector<float> scales(static_cast<size_t>(nblocks * kernels::gguf_scales_per_block(t)));
        kernels::gguf_unpack(data, nblocks, t, codes.data(), scales.data());
        if (kernels::gguf_scales_per_block(t) == 1) return scales;
        std::vector<float> d(static_cast<size_t>(nblocks));
        for (int64_t b = 0; b < nblocks; ++b) d[static_cast<size_t>(b)] = scales[static_cast<size_t>(2 * b)];  // d, not the min
        return d;
    };
    switch (type) {
        case GgmlType::Q8_0: return legacy(kernels::GgufType::Q8_0);
        case GgmlType::Q4_0: return legacy(kernels::GgufType::Q4_0);
        case GgmlType::Q4_1: return legacy(kernels::GgufType::Q4_1);
        case GgmlType::Q5_0: return legacy(kernels::GgufType::Q5_0);
        case GgmlType::MXFP4: return legacy(kernels::GgufType::MXFP4);
        case GgmlType::Q5_1: {
            const int64_t nblocks = numel / 32;
            std::vector<float> d(static_cast<size_t>(nblocks));
            for (int64_t b = 0; b < nblocks; ++b) {
                uint16_t h;
                std::memcpy(&h, data + b * kernels::kGgufQ5_1BlockBytes, 2);
                d[static_cast<size_t>(b)] = kernels::fp16_bits_to_fp32(h);
            }
            return d;
        }
        default: return {};
    }
}

}  // namespace ql
