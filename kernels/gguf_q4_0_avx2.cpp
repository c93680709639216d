// SPDX-License-Identifier: GPL-3.0-or-later
// Q4_0 as ggml `quantize_row_q4_0_ref` (ggml/src/ggml-quants.c) defines it, with the project's
// choices from gguf_block_codec.h (x*id + 8.5 in two roundings, as ggml-base; the zero code for
// blocks whose 1/d overflows, as ggml's casts give it), eight blocks (1 KiB of input) at a time:
//   pass 1, for the tile: the signed max of each block as two integer maxima, one over the
//     positive and one over the negative elements (the larger one gives the sign), then
//     d = max / -8, 1/d and fp16(d) for all eight blocks in one vector each;
//   pass 2, two blocks at a time: codes = min(15, trunc(x * (1/d) + 8.5)), packed to nibbles.
// Blocks holding NaN or +-Inf, blocks where +a and -a tie for the max (ggml keeps the sign of
// the first) and blocks whose 1/d overflows are rare in weights: the portable encoder rewrites
// them afterwards, which keeps the vector loops free of the clamps and selects those cases need.
// ggml's own reference loop is scalar for the max and SSE2 for the codes; the portable loop
// here spends most of its time on the per-block scalar work (the first index of the max, the
// division and the software fp16 rounding), which this shares between eight lanes.
#include "kernels/gguf_q4_0_avx2.h"

#include <cstring>

#include "kernels/gguf_block_codec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
#define QL_Q4_0_AVX2 1
#include <immintrin.h>
#endif

namespace ql::kernels {

constexpr int kQ4_0Bytes = gguf_codec::block_bytes(GgufType::Q4_0);  // 18

// Q5_0 (22 bytes: fp16 d, u32 qh with bit 4 of code j in bit j, 16 bytes of low nibbles) is the
// same computation with 32 levels: d = max / -16, codes min(31, trunc(x * (1/d) + 16.5)).
template <int LEVELS>
constexpr int kBlockBytes = LEVELS == 16 ? kQ4_0Bytes : gguf_codec::block_bytes(GgufType::Q5_0);

#if defined(QL_Q4_0_AVX2)
namespace {

#define QL_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

constexpr int kTile = 8;  // blocks per tile: one vector lane each in pass 1

// r[b] = max over the eight int32 lanes of v[b], b = 0..7.
QL_AVX2_TARGET inline __m256i lane_maxima(const __m256i v[kTile]) {
    __m256i t[4];
    for (int k = 0; k < 4; ++k)
        t[k] = _mm256_max_epi32(_mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]), _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
    const __m256i u0 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
    const __m256i u1 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
    return _mm256_max_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// min(15, trunc(x * id + 8.5)) for x[0..7], as int32 (product and sum rounded apart). For a finite block, id is 0 (code 8)
// or -8/max within a relative 2^-21 (d is rounded at worst as a subnormal >= 2^-128, else 1/d
// overflows), so the sum stays within 0.5 -+ 2^-17 .. 16.5 +- 2^-17: gguf_codec::offset_code's
// clamp at 0 never acts, and its NaN and Inf cases are the portable encoder's here.
// Q5_0: min(31, trunc(x * id + 16.5)), the same bounds scaled by two.
template <int LEVELS = 16>
QL_AVX2_TARGET inline __m256i codes8(const float* x, __m256 id) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x), id), _mm256_set1_ps(LEVELS / 2 + 0.5f));
    return _mm256_cvttps_epi32(_mm256_min_ps(t, _mm256_set1_ps(LEVELS - 1.0f)));
}

// Byte j = code j | code (j + 16) << 4 of the block at x, as 16-bit values in the order
// j = 0-3, 8-11 (low 128 bits), 4-7, 12-15 (high 128 bits) that packus_epi32 leaves them in.
// Q5_0: the low nibbles so, and *qh = bit 4 of code j in bit j (the sign bits after a shift by 27).
template <int LEVELS = 16>
QL_AVX2_TARGET inline __m256i nibble_pairs(const float* x, __m256 id, uint32_t* qh = nullptr) {
    __m256i c[4];
    for (int k = 0; k < 4; ++k) c[k] = codes8<LEVELS>(x + 8 * k, id);
    if constexpr (LEVELS == 32) {
        uint32_t h = 0;
        for (int k = 0; k < 4; ++k)
            h |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(c[k], 27)))) << (8 * k);
        *qh = h;
        const __m256i low = _mm256_set1_epi32(0x0F);
        for (int k = 0; k < 4; ++k) c[k] = _mm256_and_si256(c[k], low);
    }
    const __m256i lo = _mm256_packus_epi32(c[0], c[1]);
    const __m256i hi = _mm256_packus_epi32(c[2], c[3]);
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

// Blocks [0, kTile) of x -> out.
template <int LEVELS>
QL_AVX2_TARGET inline void encode_tile(const float* x, uint8_t* out) {
    constexpr int kBytes = kBlockBytes<LEVELS>, kCodes = LEVELS == 16 ? 2 : 6;  // offset of the nibbles
    constexpr int kB = gguf_codec::kB;
    const __m256i sign_bit = _mm256_set1_epi32(INT32_MIN), abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    // Pass 1. As int32, a positive float is its magnitude and a negative one is below zero: the
    // signed max over x (from 0) is the largest positive |x|, the one over -x the largest
    // negative |x|. +Inf and NaN are at or above the Inf bits: such blocks go to the portable
    // encoder, as do ties between +a and -a (ggml keeps the first one's sign).
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
    // signed_max: +P, -N, or +0.0 for a block of zeros; d = max / -8.
    const __m256i max_bits = _mm256_or_si256(M, _mm256_and_si256(_mm256_cmpgt_epi32(N, P), sign_bit));
    const __m256 d = _mm256_div_ps(_mm256_castsi256_ps(max_bits), _mm256_set1_ps(-static_cast<float>(LEVELS / 2)));
    // offset_inverse: 1/d, 0 for d = +-0 (1/d = +-Inf there; a subnormal d also overflows to
    // +-Inf, and those blocks, all codes 0, are the portable encoder's).
    __m256 id = _mm256_div_ps(_mm256_set1_ps(1.0f), d);
    const __m256i id_inf = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(id), abs_mask),
                                              _mm256_set1_epi32(static_cast<int>(kInfBits)));
    const __m256i d_zero = _mm256_cmpeq_epi32(M, _mm256_setzero_si256());
    id = _mm256_andnot_ps(_mm256_castsi256_ps(id_inf), id);
    const __m256i overflow = _mm256_andnot_si256(d_zero, id_inf);
    const int portable =
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(_mm256_or_si256(non_finite, tie), overflow)));
    // F16C rounds to nearest even with overflow to Inf, as fp32_to_fp16_bits does (checked for
    // every non-NaN float32; d is NaN only in lanes that go to the portable encoder).
    alignas(16) uint16_t h[kTile];
    _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
    alignas(32) float ids[kTile];
    _mm256_store_ps(ids, id);

    // Pass 2, two blocks at a time. After packus_epi16 the 4-byte groups are A 0-3, A 8-11,
    // B 0-3, B 8-11 | A 4-7, A 12-15, B 4-7, B 12-15 (bytes j of blocks A and B).
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int b = 0; b < kTile; b += 2) {
        uint32_t qa = 0, qb = 0;
        const __m256i ab = _mm256_packus_epi16(nibble_pairs<LEVELS>(x + b * kB, _mm256_broadcast_ss(ids + b), &qa),
                                               nibble_pairs<LEVELS>(x + (b + 1) * kB, _mm256_broadcast_ss(ids + b + 1), &qb));
        const __m256i bytes = _mm256_permutevar8x32_epi32(ab, order);
        uint8_t* oa = out + b * kBytes;
        uint8_t* ob = oa + kBytes;
        std::memcpy(oa, h + b, 2);  // little-endian fp16, as store_fp16 writes it
        std::memcpy(ob, h + b + 1, 2);
        if constexpr (LEVELS == 32) {  // little-endian u32, as q5_0_encode writes it
            std::memcpy(oa + 2, &qa, 4);
            std::memcpy(ob + 2, &qb, 4);
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(oa + kCodes), _mm256_castsi256_si128(bytes));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ob + kCodes), _mm256_extracti128_si256(bytes, 1));
    }
    for (int b = 0; b < kTile; ++b)
        if (portable & (1 << b)) {
            if constexpr (LEVELS == 16)
                gguf_codec::q4_0_encode(x + b * kB, out + b * kBytes);
            else
                gguf_codec::q5_0_encode(x + b * kB, out + b * kBytes);
        }
}

template <int LEVELS>
inline void encode_portable(const float* x, uint8_t* out) {
    if constexpr (LEVELS == 16)
        gguf_codec::q4_0_encode(x, out);
    else
        gguf_codec::q5_0_encode(x, out);
}

// Whole tiles with plain stores, then the last blocks one by one.
template <int LEVELS>
QL_AVX2_TARGET inline void encode_plain(const float* x, uint8_t* out, int64_t nblocks) {
    constexpr int kBytes = kBlockBytes<LEVELS>;
    int64_t b = 0;
    for (; b + kTile <= nblocks; b += kTile) encode_tile<LEVELS>(x + b * gguf_codec::kB, out + b * kBytes);
    for (; b < nblocks; ++b) encode_portable<LEVELS>(x + b * gguf_codec::kB, out + b * kBytes);
}

// Groups of 32 blocks (576 / 704 bytes, nine / eleven cache lines) from the first block whose bytes
// start on a 64-byte boundary (one of the first 32 when out is even) are encoded into L1 and
// streamed out with non-temporal stores, which skip reading the output's cache lines before writing
// them (PERF.md lesson 4; 5-20 % faster with two threads here).
template <int LEVELS>
QL_AVX2_TARGET void encode_streamed(const float* x, uint8_t* out, int64_t nblocks) {
    constexpr int kBytes = kBlockBytes<LEVELS>;
    constexpr int64_t kGroup = 32, kGroupBytes = kGroup * kBytes;
    int64_t head = 0;
    while (head < kGroup && (reinterpret_cast<uintptr_t>(out + head * kBytes) & 63) != 0) ++head;
    head = head == kGroup || head > nblocks ? nblocks : head;
    encode_plain<LEVELS>(x, out, head);
    int64_t b = head;
    alignas(64) uint8_t staged[kGroupBytes];
    for (; b + kGroup <= nblocks; b += kGroup) {
        for (int64_t t = 0; t < kGroup; t += kTile) encode_tile<LEVELS>(x + (b + t) * gguf_codec::kB, staged + t * kBytes);
        __m256i* dst = reinterpret_cast<__m256i*>(out + b * kBytes);
        for (int64_t k = 0; k < kGroupBytes / 32; ++k)
            _mm256_stream_si256(dst + k, _mm256_load_si256(reinterpret_cast<const __m256i*>(staged) + k));
    }
    if (b > head) _mm_sfence();  // the streamed bytes are visible before the caller reads them
    encode_plain<LEVELS>(x + b * gguf_codec::kB, out + b * kBytes, nblocks - b);
}

}  // namespace

bool q4_0_avx2_available() {
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    return ok;
}

void quantize_q4_0_avx2(const float* x, uint8_t* out, int64_t nblocks) { encode_streamed<16>(x, out, nblocks); }

void quantize_q5_0_avx2(const float* x, uint8_t* out, int64_t nblocks) { encode_streamed<32>(x, out, nblocks); }

#else

bool q4_0_avx2_available() { return false; }

void quantize_q4_0_avx2(const float* x, uint8_t* out, int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b) gguf_codec::q4_0_encode(x + b * gguf_codec::kB, out + b * kQ4_0Bytes);
}

void quantize_q5_0_avx2(const float* x, uint8_t* out, int64_t nblocks) {
    constexpr int kBytes = gguf_codec::block_bytes(GgufType::Q5_0);
    for (int64_t b = 0; b < nblocks; ++b) gguf_codec::q5_0_encode(x + b * gguf_codec::kB, out + b * kBytes);
}

#endif

}  // namespace ql::kernels
