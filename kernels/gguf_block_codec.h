// SPDX-License-Identifier: GPL-3.0-or-later
// One 32-element GGUF block (Q8_0, Q4_0, Q4_1, Q5_0, MXFP4; formulas and sources in
// gguf_blocks.h): the encoders and decoders that the CPU kernels (gguf_blocks.cpp) and the CUDA
// kernels (cuda/gguf_blocks.cu) both run, so that their bytes agree by construction. Loops have
// constant trip counts and selects rather than branches where they can, so that the CPU's
// AVX2 clone vectorises them.
#pragma once

#include <cmath>
#include <type_traits>

#include "kernels/gguf_blocks.h"
#include "kernels/half_precision.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels::gguf_codec {

constexpr int kB = static_cast<int>(kGgufBlock);
constexpr int kH = kB / 2;  // element j and j + 16 share byte j of the 4-bit formats

// Bytes per block (gguf_type_size), as a constant expression: it sizes local buffers.
QL_HD constexpr int block_bytes(GgufType t) {
    return t == GgufType::Q8_0   ? 34
           : t == GgufType::Q4_0 ? 18
           : t == GgufType::Q4_1 ? 20
           : t == GgufType::Q5_0 ? 22
           : t == GgufType::MXFP4 ? 17
                                 : 0;  // not a 32-element type of this file
}

// Calls v(std::integral_constant<GgufType, t>{}) for the run-time type t (one instantiation per
// type, so the block functions inline into each type's loop). False for a value outside the enum.
template <class Visitor>
bool visit_gguf_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q8_0: v(std::integral_constant<GgufType, GgufType::Q8_0>{}); return true;
        case GgufType::Q4_0: v(std::integral_constant<GgufType, GgufType::Q4_0>{}); return true;
        case GgufType::Q4_1: v(std::integral_constant<GgufType, GgufType::Q4_1>{}); return true;
        case GgufType::Q5_0: v(std::integral_constant<GgufType, GgufType::Q5_0>{}); return true;
        case GgufType::MXFP4: v(std::integral_constant<GgufType, GgufType::MXFP4>{}); return true;
        default: return false;  // the K-quants and IQ4: gguf_kquant_codec.h
    }
}

// ---- Shared arithmetic ----------------------------------------------------------------------

QL_HD void store_fp16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16_bits(v);
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}

QL_HD float load_fp16(const uint8_t* p) { return fp16_bits_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// C roundf / gguf-py np_roundf: half away from zero, for |v| < 2^23.
QL_HD float round_half_away(float v) {
    const float a = abs_bits(v);
    float t = rne_small(a);
    t = t > a ? t - 1.0f : t;  // floor(a)
    t = (a - t) >= 0.5f ? t + 1.0f : t;
    return copy_sign_of(t, v);
}

// trunc for 0 <= v < 2^23.
QL_HD float trunc_nonneg(float v) {
    const float r = rne_small(v);
    return r > v ? r - 1.0f : r;
}

// v clamped to [lo, hi] (lo <= 0), NaN to 0. The NaN is an Inf element times the inverse scale 0
// of a block whose finite elements are all zero: ggml computes it and casts it to an integer,
// which on x86 (cvttss2si) gives INT_MIN, whose code bits are all zero.
QL_HD float clamp_or_zero(float v, float lo, float hi) {
    return is_nan_bits(v) ? 0.0f : (v < lo ? lo : (v > hi ? hi : v));
}

// 1/d, or 0 where ggml's `d ? 1/d : 0` would overflow to Inf (Q8_0 / Q4_1 blocks whose amax is
// below ~2^-120). ggml then casts Inf or NaN (0 * Inf) to an integer, INT_MIN on x86, whose code
// bits are those of the code 0 that the inverse 0 gives here.
QL_HD float safe_inverse(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return is_finite_bits(id) ? id : 0.0f;
}

// The finite element with the largest magnitude, keeping its sign (the first one on ties, as
// ggml's loop and numpy's argmax pick it); 0 when there is none. An integer max, then the first
// index that reaches it: two loops that vectorise, where one loop carrying both does not.
QL_HD float signed_max(const float* x) {
    const uint32_t m = statistic_of<FiniteAbsmax>(x, kB).m;
    int first = kB - 1;
    for (int i = 0; i < kB; ++i) {
        const int candidate = finite_magnitude_bits(x[i]) == m ? i : kB - 1;
        first = candidate < first ? candidate : first;
    }
    return m == 0 ? 0.0f : x[first];
}

// Encoders compute their codes into local arrays and narrow them to bytes in a separate loop:
// narrowing inside the element loops (and storing through `out`, a byte pointer that may alias x
// as far as the compiler knows) stops GCC from vectorising them.

// ---- Q8_0 -------------------------------------------------------------------------------------
QL_HD void q8_0_encode(const float* x, uint8_t* out) {
    const float d = statistic_of<FiniteAbsmax>(x, kB).value() / 127.0f;
    const float id = safe_inverse(d);
    float q[kB];
    for (int i = 0; i < kB; ++i) q[i] = round_half_away(clamp_or_zero(x[i] * id, -127.0f, 127.0f));  // NaN -> 0
    store_fp16(out, d);
    for (int i = 0; i < kB; ++i) out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(q[i])));
}

QL_HD void q8_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int i = 0; i < kB; ++i) y[i] = static_cast<float>(static_cast<int8_t>(in[2 + i])) * d;
}

// ---- Q4_0 / Q5_0 (signed max, offset by 8 / 16, fused multiply-add) ------------------------

// The block's scale d = max / -(LEVELS/2), with max its signed_max.
template <int LEVELS>  // 16 or 32
QL_HD float offset_scale(const float* x) {
    return signed_max(x) / -static_cast<float>(LEVELS / 2);
}

// The code of one element, 0..LEVELS-1, as a float, for a finite 1/d: x * id + bias in two
// float32 roundings, as ggml-base (compiled without FMA flags: llama-quantize's quantizer) and
// gguf-py (numpy float32) both compute it. NaN -> the zero code, +-Inf saturate.
template <int LEVELS>
QL_HD float offset_code(float x, float id) {
    const float bias = static_cast<float>(LEVELS / 2) + 0.5f;
    const float t = is_nan_bits(x) ? bias : clamp_or_zero(x * id + bias, 0.0f, static_cast<float>(LEVELS));
    const float c = trunc_nonneg(t);
    return c > static_cast<float>(LEVELS - 1) ? static_cast<float>(LEVELS - 1) : c;
}

// ggml's `d ? 1/d : 0` for Q4_0 / Q5_0, and whether it overflowed (d subnormal: amax below
// ~2^-125). ggml then casts +-Inf or NaN (x * Inf) to an integer, which on x86 gives INT_MIN,
// whose code bits are zero: every code of such a block is 0, and so are ours.
QL_HD float offset_inverse(float d, bool* overflow) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *overflow = !is_finite_bits(id);
    return id;
}

QL_HD void q4_0_encode(const float* x, uint8_t* out) {
    const float d = offset_scale<16>(x);
    bool overflow;
    const float id = offset_inverse(d, &overflow);
    int packed[kH];  // code j + 16 * code (j + 16), summed exactly in float
    for (int j = 0; j < kH; ++j)
        packed[j] = static_cast<int>(offset_code<16>(x[j], id) + 16.0f * offset_code<16>(x[j + kH], id));
    store_fp16(out, d);
    for (int j = 0; j < kH; ++j) out[2 + j] = overflow ? uint8_t{0} : static_cast<uint8_t>(packed[j]);
}

QL_HD void q4_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int j = 0; j < kH; ++j) {
        y[j] = static_cast<float>((in[2 + j] & 0x0F) - 8) * d;
        y[j + kH] = static_cast<float>((in[2 + j] >> 4) - 8) * d;
    }
}

QL_HD void q5_0_encode(const float* x, uint8_t* out) {
    const float d = offset_scale<32>(x);
    bool overflow;
    const float id = offset_inverse(d, &overflow);
    int packed[kH];  // low nibbles of codes j and j + 16
    uint32_t qh = 0;  // bit 4 of code j in bit j
    for (int j = 0; j < kH; ++j) {
        const int lo = static_cast<int>(offset_code<32>(x[j], id));
        const int hi = static_cast<int>(offset_code<32>(x[j + kH], id));
        packed[j] = (lo & 0x0F) | ((hi & 0x0F) << 4);
        qh |= (static_cast<uint32_t>(lo >> 4) << j) | (static_cast<uint32_t>(hi >> 4) << (j + kH));
    }
    qh = overflow ? 0u : qh;
    store_fp16(out, d);
    for (int k = 0; k < 4; ++k) out[2 + k] = static_cast<uint8_t>(qh >> (8 * k));
    for (int j = 0; j < kH; ++j) out[6 + j] = overflow ? uint8_t{0} : static_cast<uint8_t>(packed[j]);
}

// The 32 five-bit codes of a block: low nibbles from the packed bytes, bit 4 from qh.
QL_HD void q5_0_codes(const uint8_t* in, int* c) {
    const uint32_t qh = in[2] | (in[3] << 8) | (in[4] << 16) | (static_cast<uint32_t>(in[5]) << 24);
    for (int j = 0; j < kH; ++j) {
        c[j] = (in[6 + j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
        c[j + kH] = (in[6 + j] >> 4) | static_cast<int>(((qh >> (j + kH)) & 1u) << 4);
    }
}

QL_HD void q5_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    int c[kB];
    q5_0_codes(in, c);
    for (int j = 0; j < kB; ++j) y[j] = static_cast<float>(c[j] - 16) * d;
}

// ---- Q4_1 -------------------------------------------------------------------------------------

// The code of one element, 0..15, as a float; NaN -> 0.
QL_HD float q4_1_code(float x, float mn, float id) {
    const float t = is_nan_bits(x) ? 0.0f : clamp_or_zero((x - mn) * id + 0.5f, 0.0f, 16.0f);
    const float c = trunc_nonneg(t);
    return c > 15.0f ? 15.0f : c;
}

QL_HD void q4_1_encode(const float* x, uint8_t* out) {
    // min and max over the finite elements (not including 0, unlike FiniteRange), as integer
    // keys in which -0 and +0 are equal (key 0), as they are to ggml's `v < min` / `v > max`.
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (int i = 0; i < kB; ++i) {
        const bool finite = magnitude_bits(x[i]) < kInfBits;
        const int32_t k = magnitude_bits(x[i]) == 0 ? 0 : sortable_key(x[i]);
        lo = finite && k < lo ? k : lo;
        hi = finite && k > hi ? k : hi;
    }
    const bool any = lo <= hi;
    float mn = any ? from_sortable_key(lo) : 0.0f;
    float mx = any ? from_sortable_key(hi) : 0.0f;
    if (lo == 0 || hi == 0) {
        // A zero extreme keeps the sign of the first zero, as ggml's loop keeps the first of equal
        // values (it matters for fp16(m) and for d = (max - min) / 15 of a block of zeros).
        float first_zero = 0.0f;
        for (int i = kB - 1; i >= 0; --i) first_zero = magnitude_bits(x[i]) == 0 ? x[i] : first_zero;
        mn = lo == 0 ? first_zero : mn;
        mx = hi == 0 ? first_zero : mx;
    }
    const float d = (mx - mn) / 15.0f;
    const float id = safe_inverse(d);
    int packed[kH];  // code j + 16 * code (j + 16), summed exactly in float
    for (int j = 0; j < kH; ++j)
        packed[j] = static_cast<int>(q4_1_code(x[j], mn, id) + 16.0f * q4_1_code(x[j + kH], mn, id));
    store_fp16(out, d);
    store_fp16(out + 2, mn);
    for (int j = 0; j < kH; ++j) out[4 + j] = static_cast<uint8_t>(packed[j]);
}

QL_HD void q4_1_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in), m = load_fp16(in + 2);
    for (int j = 0; j < kH; ++j) {
        y[j] = static_cast<float>(in[4 + j] & 0x0F) * d + m;
        y[j + kH] = static_cast<float>(in[4 + j] >> 4) * d + m;
    }
}

// ---- MXFP4 (GGUF flavour) ---------------------------------------------------------------------

// floor(log2 a) exactly, for finite a > 0 (subnormals included).
QL_HD int floor_log2_exact(float a) {
    const int e = exponent_field(a);
    if (e > -127) return e;
    uint32_t m = float_bits(a) & 0x7FFFFFu;  // subnormal: a = m * 2^-149
    int p = -1;
    while (m) {
        m >>= 1;
        ++p;
    }
    return p - 149;
}

// floor(log2f(a)) for finite a > 0 as a correctly rounded log2f gives it: one more than the exact
// floor where log2f rounds up to the next integer. `thresholds` is gguf_log2_round_up_thresholds()
// (host memory on the CPU, a copy in constant memory on the device).
QL_HD int floor_log2f(float a, const float* thresholds) {
    const int k = floor_log2_exact(a);
    return a >= thresholds[k + 149] ? k + 1 : k;
}

QL_HD uint8_t mxfp4_exponent(float amax, const float* log2_thresholds) {
    if (!(amax > 0.0f)) return 0;
    const int e = floor_log2f(amax, log2_thresholds) - 2 + 127;
    // ggml casts the float e to uint8_t, which on x86 keeps the low byte of the int32 conversion:
    // blocks with amax < 2^-125 get 232..255 (2^-24 of a scale of 2^104 and up), whose codes are
    // all zero and decode to zeros. gguf-py's np.uint8 cast wraps the same way.
    return static_cast<uint8_t>(static_cast<uint32_t>(e) & 0xFFu);
}

// ggml's kvalues_mxfp4 {0, 1, 2, 3, 4, 6, 8, 12}[c] (E2M1 doubled, paired with d = half the
// scale): from 4 on, 2 or 3 times a power of two.
QL_HD constexpr int mxfp4_doubled_int(int c) { return c < 4 ? c : (2 + (c & 1)) << ((c >> 1) - 1); }

QL_HD float mxfp4_doubled(int c) {
#if defined(__CUDA_ARCH__)
    return static_cast<float>(mxfp4_doubled_int(c));
#else
    // The same values as a table: the CPU's decode loop runs fastest with scalar loads from it
    // (a per-thread table on the device would live in local memory).
    static constexpr float k[8] = {mxfp4_doubled_int(0), mxfp4_doubled_int(1), mxfp4_doubled_int(2),
                                   mxfp4_doubled_int(3), mxfp4_doubled_int(4), mxfp4_doubled_int(5),
                                   mxfp4_doubled_int(6), mxfp4_doubled_int(7)};
    return k[c];
#endif
}

QL_HD float mxfp4_d(uint8_t e) { return pow2_any(static_cast<int>(e) - 128); }

// Code of x for a normal d (e >= 2), given inv_d = 1/d. x * inv_d is exact (a power of two, no
// overflow since |x| < 16 d), and near every midpoint the float32 differences |d k - x| are
// exact, so comparing |x/d| with the midpoints reproduces gguf-py's argmin with ties toward the
// smaller magnitude (lower index). NaN fails every comparison (code 0); +-Inf passes every one
// (7 / 15: saturated, as mxfp4_code_subnormal_d writes them).
QL_HD int mxfp4_code_normal_d(float x, float inv_d) {
    const float y = abs_bits(x * inv_d);
    const int idx = (y > 0.5f) + (y > 1.5f) + (y > 2.5f) + (y > 3.5f) + (y > 5.0f) + (y > 7.0f) + (y > 10.0f);
    return (x < 0.0f && idx > 0) ? 8 + idx : idx;
}

// Code of x for a subnormal d: gguf-py's argmin evaluated literally; NaN -> 0, +-Inf saturate.
QL_HD int mxfp4_code_subnormal_d(float x, float d) {
    if (is_nan_bits(x)) return 0;
    if (magnitude_bits(x) == kInfBits) return x > 0.0f ? 7 : 15;
    int best = 0;
    float best_err = abs_bits(0.0f - x);
    for (int c = 1; c < 16; ++c) {
        const float k = c < 8 ? mxfp4_doubled(c) : -mxfp4_doubled(c - 8);
        const float err = abs_bits(d * k - x);
        if (err < best_err) {
            best_err = err;
            best = c;
        }
    }
    return best;
}

QL_HD float mxfp4_value(int code, float d) {
    const float k = mxfp4_doubled(code & 7);
    return (code & 8) ? -(d * k) : d * k;
}

QL_HD void mxfp4_encode(const float* x, uint8_t* out, const float* log2_thresholds) {
    const uint8_t e = mxfp4_exponent(statistic_of<FiniteAbsmax>(x, kB).value(), log2_thresholds);
    out[0] = e;
    int c[kB];
    if (e >= 2) {
        const float inv_d = pow2_normal(128 - static_cast<int>(e));
        for (int i = 0; i < kB; ++i) c[i] = mxfp4_code_normal_d(x[i], inv_d);
    } else {
        const float d = mxfp4_d(e);
        for (int i = 0; i < kB; ++i) c[i] = mxfp4_code_subnormal_d(x[i], d);
    }
    for (int j = 0; j < kH; ++j) out[1 + j] = static_cast<uint8_t>(c[j] | (c[j + kH] << 4));
}

QL_HD void mxfp4_decode(const uint8_t* in, float* y) {
    const float d = mxfp4_d(in[0]);
    for (int j = 0; j < kH; ++j) {
        y[j] = mxfp4_value(in[1 + j] & 0x0F, d);
        y[j + kH] = mxfp4_value(in[1 + j] >> 4, d);
    }
}

// ---- By type ----------------------------------------------------------------------------------

// x: 32 floats -> block_bytes(T) bytes. log2_thresholds: see floor_log2f (read by MXFP4 only).
template <GgufType T>
QL_HD void encode_block(const float* x, uint8_t* out, const float* log2_thresholds) {
    if constexpr (T == GgufType::Q8_0) q8_0_encode(x, out);
    if constexpr (T == GgufType::Q4_0) q4_0_encode(x, out);
    if constexpr (T == GgufType::Q4_1) q4_1_encode(x, out);
    if constexpr (T == GgufType::Q5_0) q5_0_encode(x, out);
    if constexpr (T == GgufType::MXFP4) mxfp4_encode(x, out, log2_thresholds);
    (void)log2_thresholds;
}

template <GgufType T>
QL_HD void decode_block(const uint8_t* in, float* y) {
    if constexpr (T == GgufType::Q8_0) q8_0_decode(in, y);
    if constexpr (T == GgufType::Q4_0) q4_0_decode(in, y);
    if constexpr (T == GgufType::Q4_1) q4_1_decode(in, y);
    if constexpr (T == GgufType::Q5_0) q5_0_decode(in, y);
    if constexpr (T == GgufType::MXFP4) mxfp4_decode(in, y);
}

// The value fp16 storage gives a float: load_fp16(store_fp16(v)).
QL_HD float fp16_round(float v) { return fp16_bits_to_fp32(fp32_to_fp16_bits(v)); }

// Fake quantization of one block: y = decode(encode(x)), except that NaN inputs stay NaN,
// computed directly (the codes never become bytes): the decoders' products of the same codes
// and the same fp16 scales, so bit for bit what encode + decode give (tests/kernels). x and y
// must not overlap (callers copy the block first when y may alias x).
template <GgufType T>
QL_HD void fake_quant_block(const float* x, float* y, const float* log2_thresholds) {
    if constexpr (T == GgufType::Q8_0) {
        const float d = statistic_of<FiniteAbsmax>(x, kB).value() / 127.0f;
        const float id = safe_inverse(d), dh = fp16_round(d);
        for (int i = 0; i < kB; ++i) {
            const float q = round_half_away(clamp_or_zero(x[i] * id, -127.0f, 127.0f));
            // + 0.0f: a code rounded to -0 decodes as the integer 0, i.e. +0 * d (q8_0_decode).
            y[i] = is_nan_bits(x[i]) ? x[i] : (q + 0.0f) * dh;
        }
    } else if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
        constexpr int levels = T == GgufType::Q4_0 ? 16 : 32;
        const float d = offset_scale<levels>(x);
        bool overflow;
        const float id = offset_inverse(d, &overflow), dh = fp16_round(d);
        for (int i = 0; i < kB; ++i) {
            const float c = overflow ? 0.0f : offset_code<levels>(x[i], id);
            y[i] = is_nan_bits(x[i]) ? x[i] : (c - static_cast<float>(levels / 2)) * dh;
        }
    } else if constexpr (T == GgufType::Q4_1) {
        uint8_t bytes[block_bytes(T)];
        q4_1_encode(x, bytes);  // d and m as stored
        const float dh = load_fp16(bytes), mh = load_fp16(bytes + 2);
        for (int j = 0; j < kH; ++j) {
            y[j] = static_cast<float>(bytes[4 + j] & 0x0F) * dh + mh;
            y[j + kH] = static_cast<float>(bytes[4 + j] >> 4) * dh + mh;
        }
        for (int i = 0; i < kB; ++i) y[i] = is_nan_bits(x[i]) ? x[i] : y[i];
    } else if constexpr (T == GgufType::MXFP4) {
        const uint8_t e = mxfp4_exponent(statistic_of<FiniteAbsmax>(x, kB).value(), log2_thresholds);
        const float d = mxfp4_d(e);
        if (e >= 2) {
            const float inv_d = pow2_normal(128 - static_cast<int>(e));
            for (int i = 0; i < kB; ++i) {
                // mxfp4_value with the doubled E2M1 magnitude computed by selects (vectorises)
                const int c = mxfp4_code_normal_d(x[i], inv_d), m = c & 7;
                const float k = m < 5 ? static_cast<float>(m) : (m == 5 ? 6.0f : (m == 6 ? 8.0f : 12.0f));
                const float v = (c & 8) ? -(d * k) : d * k;
                y[i] = is_nan_bits(x[i]) ? x[i] : v;
            }
        } else {
            for (int i = 0; i < kB; ++i) {
                const float v = mxfp4_value(mxfp4_code_subnormal_d(x[i], d), d);
                y[i] = is_nan_bits(x[i]) ? x[i] : v;
            }
        }
    }
    (void)log2_thresholds;
}

}  // namespace ql::kernels::gguf_codec
