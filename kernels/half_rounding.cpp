// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/half_rounding.h"

#include "kernels/cpu_dispatch.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

QL_INLINE void bf16_span(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_round_trip(x[i]);
}

QL_INLINE void fp16_span(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_round_trip(x[i]);
}

QL_INLINE void encode_span(const float* __restrict x, uint16_t* __restrict codes, int64_t n, HalfKind k) {
    if (k == HalfKind::BF16)
        for (int64_t i = 0; i < n; ++i) codes[i] = fp32_to_bf16_bits(x[i]);
    else
        for (int64_t i = 0; i < n; ++i) codes[i] = fp32_to_fp16_bits(x[i]);
}

QL_INLINE void decode_span(const uint16_t* __restrict codes, float* __restrict y, int64_t n, HalfKind k) {
    if (k == HalfKind::BF16)
        for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_fp32(codes[i]);
    else
        for (int64_t i = 0; i < n; ++i) y[i] = fp16_bits_to_fp32(codes[i]);
}

}  // namespace

void half_round_trip(const float* x, float* y, int64_t n, HalfKind k) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        run_cpu_clone([&]() QL_CLONE_BODY {
            if (k == HalfKind::BF16)
                bf16_span(x + b, y + b, e - b);
            else
                fp16_span(x + b, y + b, e - b);
        });
    });
}

void half_encode(const float* x, int64_t n, HalfKind k, uint16_t* codes) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        run_cpu_clone([&]() QL_CLONE_BODY { encode_span(x + b, codes + b, e - b, k); });
    });
}

void half_decode(const uint16_t* codes, int64_t n, HalfKind k, float* y) {
    parallel_ranges(n, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        run_cpu_clone([&]() QL_CLONE_BODY { decode_span(codes + b, y + b, e - b, k); });
    });
}

}  // namespace ql::kernels
