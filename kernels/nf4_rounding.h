// SPDX-License-Identifier: GPL-3.0-or-later
// NF4 and bitsandbytes' signed dynamic map per element (rules in nf4.h): a block's absmax
// scaling and the nearest-code rounding against a sorted codebook's thresholds, as the CPU
// kernels (nf4.cpp) and the CUDA kernels (cuda/nf4.cu) both run them. The tables are passed in:
// host arrays on the CPU (nf4_thresholds(), kNf4Codebook, ...), copies in device memory on the
// GPU.
#pragma once

#include "kernels/portable.h"

namespace ql::kernels {

QL_HD float clamp_unit(float s) { return s < -1.0f ? -1.0f : (s > 1.0f ? 1.0f : s); }

// How the elements of one block are brought into [-1, 1] and back. A full block multiplies by
// 1 / max(absmax, 1e-38); bitsandbytes treats a short last block apart (quantize_4bit and
// quantize_blockwise alike): it divides by the clamped absmax, and stores that clamped absmax.
struct BlockwiseScale {
    float absmax;  // multiplied back, and stored
    float inv;     // full blocks
    bool tail;
    QL_HD float scaled(float v) const { return clamp_unit(tail ? v / absmax : v * inv); }
};

QL_HD BlockwiseScale blockwise_scale(float block_absmax, bool short_block) {
    const float floor_value = 1e-38f;
    const float clamped = block_absmax > floor_value ? block_absmax : floor_value;
    if (short_block) return {clamped, 0.0f, true};
    return {block_absmax, 1.0f / clamped, false};
}

// Nearest NF4 code of s in [-1, 1]: the number of the 15 thresholds below s (an exact midpoint
// goes to the lower index; NaN to 0). Branch-free: the value is selected alongside.
QL_HD int nf4_code(float s, const float* thresholds) {
    int c = 0;
    for (int i = 0; i < 15; ++i) c += s > thresholds[i] ? 1 : 0;
    return c;
}

QL_HD float nf4_value(float s, const float* thresholds, const float* codebook) {
    float v = codebook[0];
    for (int i = 0; i < 15; ++i) v = s > thresholds[i] ? codebook[i + 1] : v;
    return v;
}

// Fake quantization of one element: NaN stays NaN.
QL_HD float nf4_fake_element(float x, const BlockwiseScale& k, const float* thresholds, const float* codebook) {
    const float q = nf4_value(k.scaled(x), thresholds, codebook) * k.absmax;
    return is_nan_bits(x) ? x : q;
}

QL_HD uint8_t nf4_code_element(float x, const BlockwiseScale& k, const float* thresholds) {
    return static_cast<uint8_t>(nf4_code(k.scaled(x), thresholds));
}

QL_HD float nf4_decode_element(uint8_t code, float absmax, const float* codebook) {
    return codebook[code & 15u] * absmax;
}

// Nearest code of the 256-value dynamic map: the number of its 255 thresholds below s, by
// binary search. NaN -> 0 (it compares false at every step). Branch-free (each step adds its
// width where s is above the step's threshold): the steps' outcomes are data, and as branches
// half of them were mispredicted.
QL_HD int dynamic_map_code(float s, const float* thresholds) {
    int lo = 0;
    for (int step = 128; step > 0; step /= 2) lo += s > thresholds[lo + step - 1] ? step : 0;
    return lo;
}

// An absmax reconstructed from double quantization: map[code] * absmax2 + offset.
QL_HD float dynamic_map_decode(uint8_t code, float absmax2, float offset, const float* map) {
    return map[code] * absmax2 + offset;
}

}  // namespace ql::kernels
