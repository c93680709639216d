// SPDX-License-Identifier: GPL-3.0-or-later
// Bit-level helpers shared by the CPU and CUDA kernels. Everything here is exact float32
// arithmetic or integer manipulation, so host and device produce identical bits.
#pragma once

#include <cstdint>
#include <cstring>

// QL_HD marks the format logic that the CPU and CUDA kernels share. On the host it is forced
// inline: the CPU kernels are compiled twice (QL_CPU_CLONES, cpu_dispatch.h), and a helper that
// stays a separate function is compiled once, for the baseline target, outside the AVX2 clone.
#if defined(__CUDACC__)
#define QL_HD __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define QL_HD inline __attribute__((always_inline))
#else
#define QL_HD inline
#endif

namespace ql::kernels {

QL_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

QL_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// 2^e for e in [-126, 127] (normal float32 range), built from the exponent field: exact.
QL_HD float pow2_normal(int e) { return bits_float(static_cast<uint32_t>(e + 127) << 23); }

// 2^e for e in [-149, 127], including the float32 subnormal powers of two.
QL_HD float pow2_any(int e) {
    return e >= -126 ? pow2_normal(e) : bits_float(UINT32_C(1) << (e + 149));
}

QL_HD float abs_bits(float x) { return bits_float(float_bits(x) & 0x7FFFFFFFu); }

// NaN test. A quiet self-comparison (x != x is true exactly for NaN under IEEE 754; the kernels
// are never built with -ffast-math / -ffinite-math-only) is one vector compare, where testing
// the bits takes three (AVX2 has no unsigned compare).
QL_HD bool is_nan_bits(float x) { return x != x; }

// True for finite values (not NaN, not +-Inf).
QL_HD bool is_finite_bits(float x) { return (float_bits(x) & 0x7F800000u) != 0x7F800000u; }

// Round half to even to an integer, for |s| < 2^23, without depending on the FP environment's
// library calls: adding and subtracting 2^23 leaves exactly the RNE integer (IEEE default mode).
// Works for negative s too because the sign is handled by symmetric magic numbers.
QL_HD float rne_small(float s) {
    const float magic = 8388608.0f;  // 2^23
    const float a = abs_bits(s);
    const float r = (a + magic) - magic;
    return bits_float(float_bits(r) | (float_bits(s) & 0x80000000u));
}

// rne_small for |s| <= 2^22 in four vector instructions instead of five: s + 1.5 * 2^23 lies in
// [2^23, 2^24), where the float spacing is 1, so the sum is rounded half to even (1.5 * 2^23 is
// even) and the subtraction is exact; or-ing s's sign back keeps -0 for s in (-0.5, 0], as
// rne_small does. NaN stays NaN.
QL_HD float rne_bounded(float s) {
    const float magic = 12582912.0f;  // 1.5 * 2^23
    const float r = (s + magic) - magic;
    return bits_float(float_bits(r) | (float_bits(s) & 0x80000000u));
}

// Unbiased exponent of a float32 read from its bits (floor(log2|x|) for normal x; -127 for zero
// and subnormals; 128 for Inf/NaN). This is the "exact floor(log2)" OCP MX scales use.
QL_HD int exponent_field(float x) { return static_cast<int>((float_bits(x) >> 23) & 0xFFu) - 127; }

QL_HD float copy_sign_of(float magnitude, float sign_source) {
    return bits_float((float_bits(magnitude) & 0x7FFFFFFFu) | (float_bits(sign_source) & 0x80000000u));
}

// copy_sign_of for a magnitude whose sign bit is known to be clear (a rounded |x|, +0 included):
// one instruction less per vector.
QL_HD float with_sign_of(float non_negative, float sign_source) {
    return bits_float(float_bits(non_negative) | (float_bits(sign_source) & 0x80000000u));
}

}  // namespace ql::kernels
