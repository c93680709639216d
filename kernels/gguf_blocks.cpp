// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_blocks.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/half_precision.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {
namespace {

constexpr int64_t B = kGgufBlock;
constexpr int64_t H = kGgufBlock / 2;
constexpr float kMxfp4Doubled[8] = {0, 1, 2, 3, 4, 6, 8, 12};

QL_INLINE void store_fp16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16_bits(v);
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}
QL_INLINE float load_fp16(const uint8_t* p) {
    return fp16_bits_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// C roundf / gguf-py np_roundf: half away from zero, for |v| < 2^23.
QL_INLINE float round_half_away(float v) {
    const float a = abs_bits(v);
    float t = rne_small(a);
    t = t > a ? t - 1.0f : t;  // floor(a)
    t = (a - t) >= 0.5f ? t + 1.0f : t;
    return copy_sign_of(t, v);
}

// trunc for 0 <= v < 2^23.
QL_INLINE float trunc_nonneg(float v) {
    const float r = rne_small(v);
    return r > v ? r - 1.0f : r;
}

QL_INLINE float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// 1/d, or 0 where ggml's `d ? 1/d : 0` would overflow to Inf (d subnormal: blocks whose amax is
// below ~2^-120). ggml then computes 0 * Inf = NaN and casts it to an integer (undefined
// behaviour); we quantize such blocks to the zero code instead.
QL_INLINE float safe_inverse(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return is_finite_bits(id) ? id : 0.0f;
}

// The finite element with the largest magnitude, keeping its sign (first one on ties, as
// numpy's argmax); 0 when there is none.
QL_INLINE float signed_max(const float* x) {
    float best = 0.0f;
    uint32_t best_mag = 0;
    for (int64_t i = 0; i < B; ++i) {
        const uint32_t m = finite_magnitude_bits(x[i]);
        if (m > best_mag) {
            best_mag = m;
            best = x[i];
        }
    }
    return best;
}

// ---- Q8_0 -----------------------------------------------------------------------------------
QL_INLINE void q8_0_block(const float* x, uint8_t* out) {
    uint32_t m = 0;
    for (int64_t i = 0; i < B; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    const float d = bits_float(m) / 127.0f;
    const float id = safe_inverse(d);
    store_fp16(out, d);
    for (int64_t i = 0; i < B; ++i) {
        const float v = is_nan_bits(x[i]) ? 0.0f : clampf(x[i] * id, -127.0f, 127.0f);
        out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(round_half_away(v))));
    }
}

QL_INLINE void q8_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int64_t i = 0; i < B; ++i) y[i] = static_cast<float>(static_cast<int8_t>(in[2 + i])) * d;
}

// ---- Q4_0 / Q5_0 (signed max, offset by 8 / 16, fused multiply-add) -------------------------
template <int LEVELS>  // 16 or 32
QL_INLINE void offset_codes(const float* x, float* q, float* d_out) {
    const float mx = signed_max(x);
    const float d = mx / -static_cast<float>(LEVELS / 2);
    const float id = safe_inverse(d);
    const float bias = static_cast<float>(LEVELS / 2) + 0.5f;
    for (int64_t i = 0; i < B; ++i) {
        // gguf-py evaluates x*id + bias in float64 and ggml native builds contract it to an
        // FMA; std::fma (one rounding) reproduces both. NaN -> the zero code.
        const float t = is_nan_bits(x[i]) ? bias : clampf(std::fma(x[i], id, bias), 0.0f, static_cast<float>(LEVELS));
        const float c = trunc_nonneg(t);
        q[i] = c > static_cast<float>(LEVELS - 1) ? static_cast<float>(LEVELS - 1) : c;
    }
    *d_out = d;
}

QL_INLINE void q4_0_block(const float* x, uint8_t* out) {
    float q[B], d;
    offset_codes<16>(x, q, &d);
    store_fp16(out, d);
    for (int64_t j = 0; j < H; ++j)
        out[2 + j] = static_cast<uint8_t>(static_cast<int>(q[j]) | (static_cast<int>(q[j + H]) << 4));
}

QL_INLINE void q4_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int64_t j = 0; j < H; ++j) {
        y[j] = static_cast<float>((in[2 + j] & 0x0F) - 8) * d;
        y[j + H] = static_cast<float>((in[2 + j] >> 4) - 8) * d;
    }
}

QL_INLINE void q5_0_block(const float* x, uint8_t* out) {
    float q[B], d;
    offset_codes<32>(x, q, &d);
    store_fp16(out, d);
    uint32_t qh = 0;
    for (int64_t j = 0; j < B; ++j) qh |= static_cast<uint32_t>((static_cast<int>(q[j]) >> 4) & 1) << j;
    for (int k = 0; k < 4; ++k) out[2 + k] = static_cast<uint8_t>(qh >> (8 * k));
    for (int64_t j = 0; j < H; ++j)
        out[6 + j] = static_cast<uint8_t>((static_cast<int>(q[j]) & 0x0F) | ((static_cast<int>(q[j + H]) & 0x0F) << 4));
}

QL_INLINE int q5_0_code(const uint8_t* in, int64_t j) {
    const uint32_t qh = in[2] | (in[3] << 8) | (in[4] << 16) | (static_cast<uint32_t>(in[5]) << 24);
    const int lo = j < H ? (in[6 + j] & 0x0F) : (in[6 + j - H] >> 4);
    return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}

QL_INLINE void q5_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int64_t j = 0; j < B; ++j) y[j] = static_cast<float>(q5_0_code(in, j) - 16) * d;
}

// ---- Q4_1 -------------------------------------------------------------------------------------
QL_INLINE void q4_1_block(const float* x, uint8_t* out) {
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    bool any = false;
    for (int64_t i = 0; i < B; ++i) {
        if (magnitude_bits(x[i]) >= kInfBits) continue;
        const int32_t k = sortable_key(x[i]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
        any = true;
    }
    const float mn = any ? from_sortable_key(lo) : 0.0f;
    const float mx = any ? from_sortable_key(hi) : 0.0f;
    const float d = (mx - mn) / 15.0f;
    const float id = safe_inverse(d);
    store_fp16(out, d);
    store_fp16(out + 2, mn);
    int q[B];
    for (int64_t i = 0; i < B; ++i) {
        const float t = is_nan_bits(x[i]) ? 0.0f : clampf((x[i] - mn) * id + 0.5f, 0.0f, 16.0f);
        const float c = trunc_nonneg(t);
        q[i] = static_cast<int>(c > 15.0f ? 15.0f : c);
    }
    for (int64_t j = 0; j < H; ++j) out[4 + j] = static_cast<uint8_t>(q[j] | (q[j + H] << 4));
}

QL_INLINE void q4_1_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in), m = load_fp16(in + 2);
    for (int64_t j = 0; j < H; ++j) {
        y[j] = static_cast<float>(in[4 + j] & 0x0F) * d + m;
        y[j + H] = static_cast<float>(in[4 + j] >> 4) * d + m;
    }
}

// ---- MXFP4 (GGUF flavour) ---------------------------------------------------------------------
std::vector<float> make_log2_thresholds() {
    std::vector<float> t(277);
    for (int k = -149; k <= 127; ++k) {
        // Binade [2^k, 2^(k+1)) as ordered float bit patterns.
        const uint32_t first = float_bits(pow2_any(k));
        const uint32_t last = (k == 127 ? 0x7F7FFFFFu : float_bits(pow2_any(k + 1)) - 1u);
        auto rounds_up = [&](uint32_t b) {
            const float l = static_cast<float>(std::log2(static_cast<double>(bits_float(b))));
            return l >= static_cast<float>(k + 1);
        };
        if (!rounds_up(last)) {
            t[k + 149] = bits_float(kInfBits);
            continue;
        }
        uint32_t lo = first, hi = last;  // rounds_up(hi) is true
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (rounds_up(mid))
                hi = mid;
            else
                lo = mid + 1;
        }
        t[k + 149] = bits_float(lo);
    }
    return t;
}

inline int floor_log2_exact(float a) {  // a > 0 finite
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

QL_INLINE uint8_t mxfp4_exponent(float amax) {
    if (!(amax > 0.0f)) return 0;
    const int e = gguf_floor_log2f(amax) - 2 + 127;
    // ggml casts a negative value to uint8_t (undefined behaviour in C, wraps on x86); only
    // blocks with amax < 2^-125 reach it. We clamp to the smallest scale instead.
    return static_cast<uint8_t>(e < 0 ? 0 : (e > 254 ? 254 : e));
}

inline float mxfp4_d(uint8_t e) { return pow2_any(static_cast<int>(e) - 128); }

QL_INLINE int mxfp4_code(float x, float d, float inv_d, bool normal_d) {
    if (is_nan_bits(x)) return 0;
    if (normal_d) {
        // x * (1/d) is exact (power of two, no overflow since |x| < 16 d), and near every midpoint
        // the float32 differences |d k - x| are exact, so comparing |x/d| with the midpoints
        // reproduces gguf-py's argmin with ties toward the smaller magnitude (lower index).
        const float y = abs_bits(x * inv_d);
        int idx = (y > 0.5f) + (y > 1.5f) + (y > 2.5f) + (y > 3.5f) + (y > 5.0f) + (y > 7.0f) + (y > 10.0f);
        return (x < 0.0f && idx > 0) ? 8 + idx : idx;
    }
    // Subnormal d: evaluate the argmin literally.
    int best = 0;
    float best_err = abs_bits(0.0f - x);
    for (int c = 1; c < 16; ++c) {
        const float k = c < 8 ? kMxfp4Doubled[c] : -kMxfp4Doubled[c - 8];
        const float err = abs_bits(d * k - x);
        if (err < best_err) {
            best_err = err;
            best = c;
        }
    }
    return best;
}

QL_INLINE float mxfp4_value(int code, float d) {
    const float k = kMxfp4Doubled[code & 7];
    return (code & 8) ? -(d * k) : d * k;
}

QL_INLINE void mxfp4_block(const float* x, uint8_t* out) {
    uint32_t m = 0;
    for (int64_t i = 0; i < B; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    const uint8_t e = mxfp4_exponent(bits_float(m));
    out[0] = e;
    const float d = mxfp4_d(e);
    const bool normal_d = e >= 2;
    const float inv_d = normal_d ? pow2_normal(128 - static_cast<int>(e)) : 0.0f;
    for (int64_t j = 0; j < H; ++j) {
        int c0 = mxfp4_code(x[j], d, inv_d, normal_d);
        int c1 = mxfp4_code(x[j + H], d, inv_d, normal_d);
        if (!is_nan_bits(x[j]) && magnitude_bits(x[j]) == kInfBits) c0 = x[j] > 0 ? 7 : 15;
        if (!is_nan_bits(x[j + H]) && magnitude_bits(x[j + H]) == kInfBits) c1 = x[j + H] > 0 ? 7 : 15;
        out[1 + j] = static_cast<uint8_t>(c0 | (c1 << 4));
    }
}

QL_INLINE void mxfp4_decode(const uint8_t* in, float* y) {
    const float d = mxfp4_d(in[0]);
    for (int64_t j = 0; j < H; ++j) {
        y[j] = mxfp4_value(in[1 + j] & 0x0F, d);
        y[j + H] = mxfp4_value(in[1 + j] >> 4, d);
    }
}

// ---- dispatch -----------------------------------------------------------------------------------
// One instantiation per type so the block functions inline into the vectorised clones.
template <GgufType T>
inline void encode_one(const float* x, uint8_t* out) {
    if constexpr (T == GgufType::Q8_0) q8_0_block(x, out);
    if constexpr (T == GgufType::Q4_0) q4_0_block(x, out);
    if constexpr (T == GgufType::Q4_1) q4_1_block(x, out);
    if constexpr (T == GgufType::Q5_0) q5_0_block(x, out);
    if constexpr (T == GgufType::MXFP4) mxfp4_block(x, out);
}

template <GgufType T>
inline void decode_one(const uint8_t* in, float* y) {
    if constexpr (T == GgufType::Q8_0) q8_0_decode(in, y);
    if constexpr (T == GgufType::Q4_0) q4_0_decode(in, y);
    if constexpr (T == GgufType::Q4_1) q4_1_decode(in, y);
    if constexpr (T == GgufType::Q5_0) q5_0_decode(in, y);
    if constexpr (T == GgufType::MXFP4) mxfp4_decode(in, y);
}

template <GgufType T>
QL_CPU_CLONES void quantize_blocks(const float* x, uint8_t* out, int64_t nblocks, int64_t ts) {
    for (int64_t b = 0; b < nblocks; ++b) encode_one<T>(x + b * B, out + b * ts);
}

template <GgufType T>
QL_CPU_CLONES void dequantize_blocks(const uint8_t* in, float* y, int64_t nblocks, int64_t ts) {
    for (int64_t b = 0; b < nblocks; ++b) decode_one<T>(in + b * ts, y + b * B);
}

template <GgufType T>
QL_CPU_CLONES void fake_blocks(const float* x, float* y, int64_t nblocks) {
    uint8_t buf[64];
    float keep[B];  // the input block: y may alias x, and NaN inputs stay NaN
    for (int64_t b = 0; b < nblocks; ++b) {
        for (int64_t i = 0; i < B; ++i) keep[i] = x[b * B + i];
        encode_one<T>(keep, buf);
        decode_one<T>(buf, y + b * B);
        for (int64_t i = 0; i < B; ++i)
            if (is_nan_bits(keep[i])) y[b * B + i] = keep[i];
    }
}

template <class Visitor>
void with_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q8_0: v(std::integral_constant<GgufType, GgufType::Q8_0>{}); return;
        case GgufType::Q4_0: v(std::integral_constant<GgufType, GgufType::Q4_0>{}); return;
        case GgufType::Q4_1: v(std::integral_constant<GgufType, GgufType::Q4_1>{}); return;
        case GgufType::Q5_0: v(std::integral_constant<GgufType, GgufType::Q5_0>{}); return;
        case GgufType::MXFP4: v(std::integral_constant<GgufType, GgufType::MXFP4>{}); return;
    }
}

}  // namespace

int64_t gguf_type_size(GgufType t) {
    switch (t) {
        case GgufType::Q8_0: return 34;
        case GgufType::Q4_0: return 18;
        case GgufType::Q4_1: return 20;
        case GgufType::Q5_0: return 22;
        case GgufType::MXFP4: return 17;
    }
    return 0;
}

int gguf_scales_per_block(GgufType t) { return t == GgufType::Q4_1 ? 2 : 1; }

const float* gguf_log2_round_up_thresholds() {
    static const std::vector<float> t = make_log2_thresholds();
    return t.data();
}

int gguf_floor_log2f(float a) {
    const int k = floor_log2_exact(a);
    return a >= gguf_log2_round_up_thresholds()[k + 149] ? k + 1 : k;
}

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks) {
    const int64_t nb = rows * (cols / B), ts = gguf_type_size(t);
    gguf_log2_round_up_thresholds();  // build the table before the threads start
    with_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            quantize_blocks<decltype(type)::value>(x + b0 * B, blocks + b0 * ts, b1 - b0, ts);
        });
    });
}

void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y) {
    const int64_t nb = rows * (cols / B), ts = gguf_type_size(t);
    with_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            dequantize_blocks<decltype(type)::value>(blocks + b0 * ts, y + b0 * B, b1 - b0, ts);
        });
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t) {
    gguf_log2_round_up_thresholds();
    with_type(t, [&](auto type) {
        constexpr GgufType T = decltype(type)::value;
        for_each_block(
            L, [&](int64_t, int64_t n, int64_t off) { fake_blocks<T>(x + off, y + off, n); },
            [&](int64_t, int64_t off, int64_t len) {
                float pad[B] = {}, out[B];
                for (int64_t i = 0; i < len; ++i) pad[i] = x[off + i];
                fake_blocks<T>(pad, out, 1);
                for (int64_t i = 0; i < len; ++i) y[off + i] = out[i];
            });
    });
}

void gguf_unpack(const uint8_t* blocks, int64_t nblocks, GgufType t, uint8_t* codes, float* scales) {
    const int64_t ts = gguf_type_size(t);
    for (int64_t b = 0; b < nblocks; ++b) {
        const uint8_t* in = blocks + b * ts;
        uint8_t* c = codes + b * B;
        switch (t) {
            case GgufType::Q8_0:
                scales[b] = load_fp16(in);
                for (int64_t j = 0; j < B; ++j) c[j] = in[2 + j];
                break;
            case GgufType::Q4_0:
                scales[b] = load_fp16(in);
                for (int64_t j = 0; j < H; ++j) {
                    c[j] = in[2 + j] & 0x0F;
                    c[j + H] = in[2 + j] >> 4;
                }
                break;
            case GgufType::Q4_1:
                scales[2 * b] = load_fp16(in);
                scales[2 * b + 1] = load_fp16(in + 2);
                for (int64_t j = 0; j < H; ++j) {
                    c[j] = in[4 + j] & 0x0F;
                    c[j + H] = in[4 + j] >> 4;
                }
                break;
            case GgufType::Q5_0:
                scales[b] = load_fp16(in);
                for (int64_t j = 0; j < B; ++j) c[j] = static_cast<uint8_t>(q5_0_code(in, j));
                break;
            case GgufType::MXFP4:
                scales[b] = pow2_any(static_cast<int>(in[0]) - 127);
                for (int64_t j = 0; j < H; ++j) {
                    c[j] = in[1 + j] & 0x0F;
                    c[j + H] = in[1 + j] >> 4;
                }
                break;
        }
    }
}

}  // namespace ql::kernels
