// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_1 / Q5_1 encoders with AVX2 (gguf_min_avx2.h). Why the vector code may leave out the
// portable encoders' clamps: in a block of finite elements whose minimum and maximum are not zero
// and whose d = (max - min) / N (N = 15 or 31) is a normal float, x - min lies in [0, max - min]
// (rounding is monotonic) and 1/d is normal too (d <= FLT_MAX / 15), so (x - min) * (1/d) + 0.5
// is within 0.5 .. N + 0.5 + 2^-17: trunc of it is the code, 0..N, with no clamp or cast wrap
// acting (q4_1_code's clamps, to_u8's integer indefinite). min and max as vector min/max equal
// ggml's first-wins `<` / `>` loop on such blocks (no NaN, no signed zeros among the extremes).
#include "kernels/gguf_min_avx2.h"

#include <cfloat>
#include <cstring>

#include "kernels/gguf_block_codec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
#define QL_MIN_AVX2 1
#include <immintrin.h>
#endif

namespace ql::kernels {

#if defined(QL_MIN_AVX2)
namespace {

#define QL_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

using gguf_codec::kB;
constexpr int kTile = 8;

QL_AVX2_TARGET inline __m256 low64(__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
}
QL_AVX2_TARGET inline __m256 high64(__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
}

struct MinOp {
    QL_AVX2_TARGET __m256 operator()(__m256 a, __m256 b) const { return _mm256_min_ps(a, b); }
};
struct MaxOp {
    QL_AVX2_TARGET __m256 operator()(__m256 a, __m256 b) const { return _mm256_max_ps(a, b); }
};
struct BitsMaxOp {  // the larger int32 bit pattern (|x| bits order as the magnitudes do)
    QL_AVX2_TARGET __m256 operator()(__m256 a, __m256 b) const {
        return _mm256_castsi256_ps(_mm256_max_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
    }
};

// r[b] = the reduction over the eight lanes of v[b] (as gguf_q4_0_avx2.cpp's lane_maxima).
template <class Op>
QL_AVX2_TARGET inline __m256 lane_reduce(const __m256 v[kTile], Op op) {
    __m256 t[4];
    for (int k = 0; k < 4; ++k) t[k] = op(_mm256_unpacklo_ps(v[2 * k], v[2 * k + 1]), _mm256_unpackhi_ps(v[2 * k], v[2 * k + 1]));
    const __m256 u0 = op(low64(t[0], t[1]), high64(t[0], t[1]));
    const __m256 u1 = op(low64(t[2], t[3]), high64(t[2], t[3]));
    return op(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// 16-bit values (code j | code (j + 16) << 4) of one block in packus order (gguf_q4_0_avx2.cpp's
// nibble_pairs); FIVE: the codes' bit 4 into *qh (bit j of code j) and the low nibbles packed.
template <bool FIVE>
QL_AVX2_TARGET inline __m256i nibble_pairs(const float* x, __m256 mn, __m256 id, uint32_t* qh) {
    __m256i c[4];
    for (int k = 0; k < 4; ++k)
        c[k] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * k), mn), id), _mm256_set1_ps(0.5f)));
    if constexpr (FIVE) {
        uint32_t h = 0;
        for (int k = 0; k < 4; ++k)
            h |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(c[k], 27)))) << (8 * k);
        *qh = h;
        for (int k = 0; k < 4; ++k) c[k] = _mm256_and_si256(c[k], _mm256_set1_epi32(0x0F));
    }
    const __m256i lo = _mm256_packus_epi32(c[0], c[1]);
    const __m256i hi = _mm256_packus_epi32(c[2], c[3]);
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

// Blocks [0, kTile) of x -> out; returns the mask of blocks left to the portable encoder.
template <bool FIVE>
QL_AVX2_TARGET inline int encode_tile(const float* x, uint8_t* out) {
    constexpr int kBytes = FIVE ? 24 : 20, kCodes = FIVE ? 8 : 4;
    __m256 lo[kTile], hi[kTile], mag[kTile];
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    for (int b = 0; b < kTile; ++b) {
        __m256 l = _mm256_loadu_ps(x + b * kB), h = l, a = _mm256_and_ps(l, abs_mask);
        for (int k = 1; k < 4; ++k) {
            const __m256 v = _mm256_loadu_ps(x + b * kB + 8 * k);
            l = _mm256_min_ps(l, v);
            h = _mm256_max_ps(h, v);
            a = BitsMaxOp{}(a, _mm256_and_ps(v, abs_mask));
        }
        lo[b] = l;
        hi[b] = h;
        mag[b] = a;
    }
    const __m256 mn = lane_reduce(lo, MinOp{}), mx = lane_reduce(hi, MaxOp{});
    // as integers, the largest |x| bits: at or above the Inf bits when the block has NaN or Inf
    const __m256i top = _mm256_castps_si256(lane_reduce(mag, BitsMaxOp{}));
    const __m256 d = _mm256_div_ps(_mm256_sub_ps(mx, mn), _mm256_set1_ps(FIVE ? 31.0f : 15.0f));
    const __m256 zero = _mm256_setzero_ps();
    const __m256 non_finite = _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x7F7FFFFF)));
    const __m256 zero_extreme = _mm256_or_ps(_mm256_cmp_ps(mn, zero, _CMP_EQ_OQ), _mm256_cmp_ps(mx, zero, _CMP_EQ_OQ));
    const __m256 d_normal = _mm256_and_ps(_mm256_cmp_ps(d, _mm256_set1_ps(FLT_MIN), _CMP_GE_OQ),
                                          _mm256_cmp_ps(d, _mm256_set1_ps(FLT_MAX), _CMP_LE_OQ));
    const int portable = _mm256_movemask_ps(_mm256_or_ps(_mm256_or_ps(non_finite, zero_extreme), _mm256_andnot_ps(d_normal, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))));
    const __m256 id = _mm256_div_ps(_mm256_set1_ps(1.0f), d);
    // F16C rounds to nearest even with overflow to Inf, as fp32_to_fp16_bits does for every
    // non-NaN float (gguf_q4_0_avx2.cpp); NaN lanes are portable.
    alignas(16) uint16_t hd[kTile], hm[kTile];
    _mm_store_si128(reinterpret_cast<__m128i*>(hd), _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
    _mm_store_si128(reinterpret_cast<__m128i*>(hm), _mm256_cvtps_ph(mn, _MM_FROUND_TO_NEAREST_INT));
    alignas(32) float ids[kTile], mns[kTile];
    _mm256_store_ps(ids, id);
    _mm256_store_ps(mns, mn);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int b = 0; b < kTile; b += 2) {
        uint32_t qa = 0, qb = 0;
        const __m256i ab = _mm256_packus_epi16(
            nibble_pairs<FIVE>(x + b * kB, _mm256_broadcast_ss(mns + b), _mm256_broadcast_ss(ids + b), &qa),
            nibble_pairs<FIVE>(x + (b + 1) * kB, _mm256_broadcast_ss(mns + b + 1), _mm256_broadcast_ss(ids + b + 1), &qb));
        const __m256i bytes = _mm256_permutevar8x32_epi32(ab, order);
        uint8_t* oa = out + b * kBytes;
        uint8_t* ob = oa + kBytes;
        std::memcpy(oa, hd + b, 2);  // little-endian fp16 d, then fp16 m
        std::memcpy(oa + 2, hm + b, 2);
        std::memcpy(ob, hd + b + 1, 2);
        std::memcpy(ob + 2, hm + b + 1, 2);
        if constexpr (FIVE) {  // little-endian u32 qh
            std::memcpy(oa + 4, &qa, 4);
            std::memcpy(ob + 4, &qb, 4);
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(oa + kCodes), _mm256_castsi256_si128(bytes));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ob + kCodes), _mm256_extracti128_si256(bytes, 1));
    }
    return portable;
}

template <bool FIVE, class Portable>
QL_AVX2_TARGET void encode_blocks(const float* x, uint8_t* out, int64_t nblocks, const Portable& portable_block) {
    constexpr int kBytes = FIVE ? 24 : 20;
    int64_t b = 0;
    for (; b + kTile <= nblocks; b += kTile) {
        const int portable = encode_tile<FIVE>(x + b * kB, out + b * kBytes);
        for (int k = 0; k < kTile; ++k)
            if (portable & (1 << k)) portable_block(x + (b + k) * kB, out + (b + k) * kBytes);
    }
    for (; b < nblocks; ++b) portable_block(x + b * kB, out + b * kBytes);
}

}  // namespace

bool gguf_min_avx2_available() {
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    return ok;
}

void quantize_q4_1_avx2(const float* x, uint8_t* out, int64_t nblocks) {
    encode_blocks<false>(x, out, nblocks, [](const float* xb, uint8_t* ob) { gguf_codec::q4_1_encode(xb, ob); });
}

void quantize_q5_1_avx2(const float* x, uint8_t* out, int64_t nblocks, void (*portable_block)(const float*, uint8_t*)) {
    encode_blocks<true>(x, out, nblocks, portable_block);
}

#else

bool gguf_min_avx2_available() { return false; }

void quantize_q4_1_avx2(const float* x, uint8_t* out, int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b) gguf_codec::q4_1_encode(x + b * gguf_codec::kB, out + b * 20);
}

void quantize_q5_1_avx2(const float* x, uint8_t* out, int64_t nblocks, void (*portable_block)(const float*, uint8_t*)) {
    for (int64_t b = 0; b < nblocks; ++b) portable_block(x + b * gguf_codec::kB, out + b * 24);
}

#endif

}  // namespace ql::kernels
