// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/half_rounding.h"

#include "kernels/cpu_dispatch.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

QL_CPU_CLONES
void bf16_span(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_fp32(fp32_to_bf16_bits(x[i]));
}

QL_CPU_CLONES
void fp16_span(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_bits_to_fp32(fp32_to_fp16_bits(x[i]));
}

}  // namespace

void half_round_trip(const float* x, float* y, int64_t n, HalfKind k) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        if (k == HalfKind::BF16)
            bf16_span(x + b, y + b, e - b);
        else
            fp16_span(x + b, y + b, e - b);
    });
}

void half_encode(const float* x, int64_t n, HalfKind k, uint16_t* codes) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) codes[i] = k == HalfKind::BF16 ? fp32_to_bf16_bits(x[i]) : fp32_to_fp16_bits(x[i]);
    });
}

void half_decode(const uint16_t* codes, int64_t n, HalfKind k, float* y) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = k == HalfKind::BF16 ? bf16_bits_to_fp32(codes[i]) : fp16_bits_to_fp32(codes[i]);
    });
}

}  // namespace ql::kernels
