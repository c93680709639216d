// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF fake quantization of Q8_0, Q4_0, Q5_0 and MXFP4 with AVX2 intrinsics (gguf_fake_avx2.h).
// Eight 32-blocks (1 KiB of input) at a time:
//   pass 1, for the tile: each block's statistic as integer maxima over the float bits (the
//     finite |x| max for Q8_0 / MXFP4; for Q4_0 / Q5_0 one max over the positive and one over the
//     negative elements, which give the signed max as gguf_q4_0_avx2.cpp computes it), then d,
//     1/d and fp16(d) for all eight blocks in one vector each (MXFP4: the E8M0 exponent per block);
//   pass 2, block by block: the codes, decoded in registers to the same float32 products the
//     decoders compute (gguf_block_codec.h), stored.
// The per-element formulas are those of gguf_codec::fake_quant_block / gguf_tiles::fake_tile
// (two float32 roundings for x * id + bias, kernels built with -ffp-contract=off): where the
// vector code leaves out a clamp or a select, the comment says why it cannot act. Blocks whose
// lanes need one (NaN/Inf elements, +a/-a ties of the signed max, Q4_0 / Q5_0 blocks whose 1/d
// overflows, MXFP4 blocks with a subnormal scale) are rare in weights and go to the portable
// block function, which is the definition.
#include "kernels/gguf_fake_avx2.h"

#include <cstring>

#include "kernels/gguf_block_codec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
#define QL_GGUF_FAKE_AVX2 1
#include <immintrin.h>
#endif

namespace ql::kernels {

bool gguf_fake_avx2_handles(GgufType t) {
    return t == GgufType::Q8_0 || t == GgufType::Q4_0 || t == GgufType::Q5_0 || t == GgufType::MXFP4;
}

#if defined(QL_GGUF_FAKE_AVX2)
namespace {

#define QL_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

using gguf_codec::kB;
constexpr int kTile = 8;  // blocks per tile: one vector lane each in pass 1

// Outputs of at least this many bytes per call are written with non-temporal stores: they do not
// fit in the caches, so reading their lines before writing them (what a plain store does) only
// costs bandwidth (PERF.md lesson 4). Smaller ones (a training step's weights) stay cached.
constexpr int64_t kStreamBytes = int64_t{4} << 20;

// r[b] = max over the eight int32 lanes of v[b], b = 0..7 (as gguf_q4_0_avx2.cpp).
QL_AVX2_TARGET inline __m256i lane_maxima(const __m256i v[kTile]) {
    __m256i t[4];
    for (int k = 0; k < 4; ++k)
        t[k] = _mm256_max_epi32(_mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]), _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
    const __m256i u0 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
    const __m256i u1 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
    return _mm256_max_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// |x| as int32 bits, max over each block: the |x| max of blocks without NaN/Inf (which are at or
// above the Inf bits, so a lane >= kInfBits marks a block for the portable path).
QL_AVX2_TARGET inline __m256i abs_maxima(const float* x) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i m[kTile];
    for (int b = 0; b < kTile; ++b) {
        __m256i a = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k)
            a = _mm256_max_epi32(a, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + b * kB + 8 * k)), abs_mask));
        m[b] = a;
    }
    return lane_maxima(m);
}

// fp16(d) read back as float32 for eight lanes: F16C rounds to nearest even with overflow to Inf,
// as fp32_to_fp16_bits does for every non-NaN float (gguf_q4_0_avx2.cpp); d is NaN only in lanes
// that go to the portable path.
QL_AVX2_TARGET inline __m256 fp16_round8(__m256 d) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
}

QL_AVX2_TARGET inline __m256i is_inf_bits(__m256 v) {
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7FFFFFFF)),
                              _mm256_set1_epi32(static_cast<int>(kInfBits)));
}

template <bool kStream>
QL_AVX2_TARGET inline void store8(float* p, __m256 v) {
    if constexpr (kStream)
        _mm256_stream_ps(p, v);
    else
        _mm256_storeu_ps(p, v);
}

// The per-block scalars of a tile, and which blocks take the portable path (bit b: block b).
struct Scales {
    alignas(32) float a[kTile];  // Q8_0, Q4_0, Q5_0: 1/d; MXFP4: 1/d (2^(128-e))
    alignas(32) float b[kTile];  // Q8_0, Q4_0, Q5_0: fp16(d) as float; MXFP4: d = 2^(e-128)
    int portable = 0;
};

template <GgufType T>
QL_AVX2_TARGET inline Scales tile_scales(const float* x, const float* log2_thresholds) {
    Scales s;
    if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
        // gguf_q4_0_avx2.cpp's pass 1: signed_max as +P, -N or +0, d = max / -(levels / 2).
        const __m256i sign_bit = _mm256_set1_epi32(INT32_MIN);
        __m256i pos[kTile], neg[kTile];
        for (int b = 0; b < kTile; ++b) {
            __m256i p = _mm256_setzero_si256(), n = _mm256_setzero_si256();
            for (int k = 0; k < 4; ++k) {
                const __m256i v = _mm256_castps_si256(_mm256_loadu_ps(x + b * kB + 8 * k));
                p = _mm256_max_epi32(p, v);
                n = _mm256_max_epi32(n, _mm256_xor_si256(v, sign_bit));
            }
            pos[b] = p;
            neg[b] = n;
        }
        const __m256i P = lane_maxima(pos), N = lane_maxima(neg), M = _mm256_max_epi32(P, N);
        const __m256i non_finite = _mm256_cmpgt_epi32(M, _mm256_set1_epi32(static_cast<int>(kInfBits) - 1));
        const __m256i tie = _mm256_andnot_si256(_mm256_cmpeq_epi32(P, _mm256_setzero_si256()), _mm256_cmpeq_epi32(P, N));
        const __m256i max_bits = _mm256_or_si256(M, _mm256_and_si256(_mm256_cmpgt_epi32(N, P), sign_bit));
        const __m256 d = _mm256_div_ps(_mm256_castsi256_ps(max_bits), _mm256_set1_ps(T == GgufType::Q4_0 ? -8.0f : -16.0f));
        // offset_inverse: 1/d, 0 for d = +-0; a subnormal d whose 1/d overflows is portable.
        const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), d);
        const __m256i id_inf = is_inf_bits(inv);
        const __m256i d_zero = _mm256_cmpeq_epi32(M, _mm256_setzero_si256());
        const __m256i overflow = _mm256_andnot_si256(d_zero, id_inf);
        s.portable = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(_mm256_or_si256(non_finite, tie), overflow)));
        _mm256_store_ps(s.a, _mm256_andnot_ps(_mm256_castsi256_ps(id_inf), inv));
        _mm256_store_ps(s.b, fp16_round8(d));
    } else if constexpr (T == GgufType::Q8_0) {
        const __m256i A = abs_maxima(x);
        s.portable = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(A, _mm256_set1_epi32(static_cast<int>(kInfBits) - 1))));
        const __m256 d = _mm256_div_ps(_mm256_castsi256_ps(A), _mm256_set1_ps(127.0f));
        // safe_inverse: 1/d, or 0 where d is 0 or 1/d is not finite.
        const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), d);
        const __m256 d_zero = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ);
        const __m256 bad = _mm256_or_ps(d_zero, _mm256_castsi256_ps(is_inf_bits(inv)));
        _mm256_store_ps(s.a, _mm256_andnot_ps(bad, inv));
        _mm256_store_ps(s.b, fp16_round8(d));
    } else {  // MXFP4
        alignas(32) uint32_t amax[kTile];
        _mm256_store_si256(reinterpret_cast<__m256i*>(amax), abs_maxima(x));
        for (int b = 0; b < kTile; ++b) {
            const bool finite = amax[b] < kInfBits;
            const uint8_t e = finite ? gguf_codec::mxfp4_exponent(bits_float(amax[b]), log2_thresholds) : uint8_t{0};
            if (!finite || e < 2) {  // non-finite elements, or a subnormal d: the literal argmin
                s.portable |= 1 << b;
                s.a[b] = s.b[b] = 0.0f;
                continue;
            }
            s.a[b] = pow2_normal(128 - static_cast<int>(e));
            s.b[b] = gguf_codec::mxfp4_d(e);
        }
    }
    return s;
}

// One block of fake-quantized values from its scalars (lanes of the tile's Scales).
template <GgufType T, bool kStream>
QL_AVX2_TARGET inline void fake_block(const float* x, float* y, float a, float b) {
    const __m256 id = _mm256_set1_ps(a), dh = _mm256_set1_ps(b);
    if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
        // offset_code: min(LEVELS - 1, trunc(x * id + bias)). For a finite block whose 1/d does
        // not overflow, x * id + bias stays within 0.5 -+ 2^-17 .. LEVELS + 0.5 +- 2^-17
        // (gguf_q4_0_avx2.cpp codes8), so the clamps at 0 and LEVELS never act.
        constexpr float levels = T == GgufType::Q4_0 ? 16.0f : 32.0f;
        const __m256 bias = _mm256_set1_ps(levels / 2 + 0.5f), top = _mm256_set1_ps(levels - 1), half = _mm256_set1_ps(levels / 2);
        for (int k = 0; k < 4; ++k) {
            const __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id), bias);
            const __m256 c = _mm256_min_ps(_mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), top);
            store8<kStream>(y + 8 * k, _mm256_mul_ps(_mm256_sub_ps(c, half), dh));
        }
    } else if constexpr (T == GgufType::Q8_0) {
        // q = round_half_away(clamp(x * id, -127, 127)) (x finite: no NaN), then (q + 0) * fp16(d).
        const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f), one_half = _mm256_set1_ps(0.5f),
                     one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
        for (int k = 0; k < 4; ++k) {
            const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id), lo), hi);
            const __m256 a = _mm256_andnot_ps(sign, v);
            const __m256 f = _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);  // floor(a), exact
            const __m256 r = _mm256_add_ps(f, _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(a, f), one_half, _CMP_GE_OQ), one));
            const __m256 q = _mm256_or_ps(r, _mm256_and_ps(v, sign));  // copy_sign_of(r, v)
            store8<kStream>(y + 8 * k, _mm256_mul_ps(_mm256_add_ps(q, _mm256_setzero_ps()), dh));
        }
    } else {  // MXFP4, normal d: mxfp4_code_normal_d, then the doubled E2M1 magnitude times d
        const __m256 table = _mm256_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f);
        const __m256 sign = _mm256_set1_ps(-0.0f);
        const __m256 m0 = _mm256_set1_ps(0.5f), m1 = _mm256_set1_ps(1.5f), m2 = _mm256_set1_ps(2.5f), m3 = _mm256_set1_ps(3.5f),
                     m4 = _mm256_set1_ps(5.0f), m5 = _mm256_set1_ps(7.0f), m6 = _mm256_set1_ps(10.0f);
        for (int k = 0; k < 4; ++k) {
            const __m256 xv = _mm256_loadu_ps(x + 8 * k);
            const __m256 u = _mm256_andnot_ps(sign, _mm256_mul_ps(xv, id));  // abs_bits(x * inv_d)
            // idx = the number of midpoints below u, as minus the sum of the -1 compare masks
            __m256i n = _mm256_add_epi32(_mm256_castps_si256(_mm256_cmp_ps(u, m0, _CMP_GT_OQ)),
                                         _mm256_castps_si256(_mm256_cmp_ps(u, m1, _CMP_GT_OQ)));
            n = _mm256_add_epi32(n, _mm256_add_epi32(_mm256_castps_si256(_mm256_cmp_ps(u, m2, _CMP_GT_OQ)),
                                                     _mm256_castps_si256(_mm256_cmp_ps(u, m3, _CMP_GT_OQ))));
            n = _mm256_add_epi32(n, _mm256_add_epi32(_mm256_castps_si256(_mm256_cmp_ps(u, m4, _CMP_GT_OQ)),
                                                     _mm256_castps_si256(_mm256_cmp_ps(u, m5, _CMP_GT_OQ))));
            n = _mm256_add_epi32(n, _mm256_castps_si256(_mm256_cmp_ps(u, m6, _CMP_GT_OQ)));
            const __m256i idx = _mm256_sub_epi32(_mm256_setzero_si256(), n);
            const __m256 v = _mm256_mul_ps(dh, _mm256_permutevar8x32_ps(table, idx));  // d * k
            // code bit 3 (x < 0 and idx > 0) negates: -(d * k)
            const __m256 negative = _mm256_and_ps(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_LT_OQ),
                                                  _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_setzero_si256())));
            store8<kStream>(y + 8 * k, _mm256_xor_ps(v, _mm256_and_ps(negative, sign)));
        }
    }
}

// The portable block function on a copy of the block (y may alias x).
template <GgufType T>
inline void portable_block(const float* x, float* y, const float* log2_thresholds) {
    float keep[kB];
    std::memcpy(keep, x, sizeof keep);
    gguf_codec::fake_quant_block<T>(keep, y, log2_thresholds);
}

template <GgufType T, bool kStream>
QL_AVX2_TARGET void fake_range(const float* x, float* y, int64_t nblocks, const float* log2_thresholds) {
    int64_t t = 0;
    for (; t + kTile <= nblocks; t += kTile) {
        const float* xt = x + t * kB;
        float* yt = y + t * kB;
        const Scales s = tile_scales<T>(xt, log2_thresholds);
        // Pass 1 read the whole tile; block b is read again just before it is written.
        for (int b = 0; b < kTile; ++b) {
            if (s.portable & (1 << b))
                portable_block<T>(xt + b * kB, yt + b * kB, log2_thresholds);
            else
                fake_block<T, kStream>(xt + b * kB, yt + b * kB, s.a[b], s.b[b]);
        }
    }
    for (; t < nblocks; ++t) portable_block<T>(x + t * kB, y + t * kB, log2_thresholds);
    if constexpr (kStream) _mm_sfence();  // the streamed floats are visible before the caller reads them
}

template <GgufType T>
void fake_any(const float* x, float* y, int64_t nblocks, const float* log2_thresholds) {
    const bool stream = nblocks * kB * static_cast<int64_t>(sizeof(float)) >= kStreamBytes &&
                        (reinterpret_cast<uintptr_t>(y) & 31) == 0;
    if (stream)
        fake_range<T, true>(x, y, nblocks, log2_thresholds);
    else
        fake_range<T, false>(x, y, nblocks, log2_thresholds);
}

}  // namespace

bool gguf_fake_avx2_available() {
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    return ok;
}

void gguf_fake_quant_avx2(GgufType t, const float* x, float* y, int64_t nblocks, const float* log2_thresholds) {
    switch (t) {
        case GgufType::Q8_0: return fake_any<GgufType::Q8_0>(x, y, nblocks, log2_thresholds);
        case GgufType::Q4_0: return fake_any<GgufType::Q4_0>(x, y, nblocks, log2_thresholds);
        case GgufType::Q5_0: return fake_any<GgufType::Q5_0>(x, y, nblocks, log2_thresholds);
        case GgufType::MXFP4: return fake_any<GgufType::MXFP4>(x, y, nblocks, log2_thresholds);
        default: return;
    }
}

#else

bool gguf_fake_avx2_available() { return false; }

void gguf_fake_quant_avx2(GgufType, const float*, float*, int64_t, const float*) {}

#endif

}  // namespace ql::kernels
