// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/half_precision.h"
#include "kernels/microscaling.h"
#include "kernels/minifloat.h"
#include "kernels/mx_element.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

using reference::Element;
using test::bits_of;
using test::float_of;

// Every code decodes to the textbook value (exhaustive decode table).
template <class F>
void check_decode_table(Element el) {
    for (unsigned c = 0; c < reference::element_code_count(el); ++c) {
        const float got = decode_element<F>(c);
        const float want = reference::element_value(el, c);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "code " << c;
        } else {
            EXPECT_EQ(bits_of(got), bits_of(want)) << "code " << c << ": " << got << " vs " << want;
        }
    }
}

// Encoding agrees with the grid search on: a stride over all float32 patterns, every midpoint
// between adjacent grid values and its neighbours, and the special values.
template <class F>
void check_encode(Element el) {
    std::vector<float> probes;
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4093) probes.push_back(float_of(static_cast<uint32_t>(b)));
    const unsigned n = reference::element_code_count(el) / 2;
    for (unsigned c = 0; c + 1 < n; ++c) {
        const float lo = reference::element_value(el, c), hi = reference::element_value(el, c + 1);
        if (std::isnan(hi) || std::isinf(hi)) break;
        const float mid = (lo + hi) / 2;  // exact: one more mantissa bit than the grid
        for (int d = -3; d <= 3; ++d) {
            const float v = float_of(bits_of(mid) + d);
            probes.push_back(v);
            probes.push_back(-v);
        }
        probes.push_back(lo);
        probes.push_back(-hi);
    }
    const float mx = reference::element_max(el);
    for (float v : {mx, std::nextafter(mx, 1e30f), mx * 1.0625f, mx * 2.0f, 3.4e38f, INFINITY, -INFINITY, 0.0f, -0.0f,
                    std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), 1e-45f})
        probes.push_back(v);
    size_t mismatches = 0;
    for (float v : probes) {
        const unsigned got = encode_element<F>(v);
        const unsigned want = reference::element_encode(el, v);
        if (got != want && ++mismatches < 10)
            ADD_FAILURE() << "x=" << v << " (0x" << std::hex << bits_of(v) << ") code 0x" << got << " want 0x" << want;
        if (!std::isnan(v)) {
            // Fake quantization equals the decoded code.
            const float fq = fake_quant_element<F>(v);
            const float dec = decode_element<F>(want);
            if (!(fq == dec) && ++mismatches < 10) ADD_FAILURE() << "fake quant of " << v << " = " << fq << " vs " << dec;
        }
    }
    EXPECT_EQ(mismatches, 0u);
}

TEST(Minifloat, E4M3DecodeTableIsExhaustivelyCorrect) { check_decode_table<E4M3>(Element::E4M3); }
TEST(Minifloat, E5M2DecodeTableIsExhaustivelyCorrect) { check_decode_table<E5M2>(Element::E5M2); }
TEST(Minifloat, E3M2DecodeTableIsExhaustivelyCorrect) { check_decode_table<E3M2>(Element::E3M2); }
TEST(Minifloat, E2M3DecodeTableIsExhaustivelyCorrect) { check_decode_table<E2M3>(Element::E2M3); }
TEST(Minifloat, E2M1DecodeTableIsExhaustivelyCorrect) { check_decode_table<E2M1>(Element::E2M1); }

TEST(Minifloat, E4M3EncodeMatchesGridSearch) { check_encode<E4M3>(Element::E4M3); }
TEST(Minifloat, E5M2EncodeMatchesGridSearch) { check_encode<E5M2>(Element::E5M2); }
TEST(Minifloat, E3M2EncodeMatchesGridSearch) { check_encode<E3M2>(Element::E3M2); }
TEST(Minifloat, E2M3EncodeMatchesGridSearch) { check_encode<E2M3>(Element::E2M3); }
TEST(Minifloat, E2M1EncodeMatchesGridSearch) { check_encode<E2M1>(Element::E2M1); }

TEST(Minifloat, KnownValuesFromFormatsMd) {
    EXPECT_EQ(E4M3::max_finite(), 448.0f);
    EXPECT_EQ(E5M2::max_finite(), 57344.0f);
    EXPECT_EQ(E3M2::max_finite(), 28.0f);
    EXPECT_EQ(E2M3::max_finite(), 7.5f);
    EXPECT_EQ(E2M1::max_finite(), 6.0f);
    EXPECT_EQ(decode_element<E4M3>(0x7E), 448.0f);
    EXPECT_EQ(decode_element<E4M3>(0x08), 0.015625f);       // 2^-6, smallest normal
    EXPECT_EQ(decode_element<E4M3>(0x01), 0.001953125f);    // 2^-9, smallest subnormal
    EXPECT_EQ(decode_element<E5M2>(0x7B), 57344.0f);
    EXPECT_TRUE(std::isinf(decode_element<E5M2>(0x7C)));
    EXPECT_TRUE(std::isnan(decode_element<E5M2>(0x7D)));
    EXPECT_TRUE(std::isnan(decode_element<E4M3>(0x7F)));
    const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (unsigned c = 0; c < 8; ++c) {
        EXPECT_EQ(decode_element<E2M1>(c), e2m1[c]);
        EXPECT_EQ(decode_element<E2M1>(c | 8u), -e2m1[c]);
    }
}

TEST(Minifloat, E2M1TiesFollowFormatsMd) {
    // FORMATS.md: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4.
    const float in[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    const float out[7] = {0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f};
    for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(fake_quant_element<E2M1>(in[i]), out[i]) << in[i];
        EXPECT_EQ(fake_quant_element<E2M1>(-in[i]), -out[i]) << -in[i];
    }
}

TEST(Minifloat, OverflowAndInfinitySaturateNanFollowsTheCodeRule) {
    EXPECT_EQ(encode_element<E4M3>(1e9f), 0x7Eu);
    EXPECT_EQ(encode_element<E4M3>(-INFINITY), 0xFEu);
    EXPECT_EQ(encode_element<E4M3>(464.0f), 0x7Eu);  // would round to 480: saturates
    EXPECT_EQ(encode_element<E5M2>(INFINITY), 0x7Bu);
    EXPECT_EQ(encode_element<E4M3>(std::numeric_limits<float>::quiet_NaN()), 0x7Fu);
    EXPECT_EQ(encode_element<E4M3>(-std::numeric_limits<float>::quiet_NaN()), 0xFFu);
    EXPECT_EQ(encode_element<E2M1>(-std::numeric_limits<float>::quiet_NaN()), 0x7u);  // +max
    EXPECT_EQ(encode_element<E3M2>(std::numeric_limits<float>::quiet_NaN()), 0x1Fu);
    EXPECT_EQ(encode_element<E2M1>(-100.0f), 0xFu);
}

TEST(HalfPrecision, Fp16MatchesCompilerConversionOnAStrideOfAllFloats) {
    size_t bad = 0;
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 997) {
        const float x = float_of(static_cast<uint32_t>(b));
        const _Float16 h = static_cast<_Float16>(x);
        uint16_t want;
        std::memcpy(&want, &h, 2);
        const uint16_t got = fp32_to_fp16_bits(x);
        if (std::isnan(x)) {
            if ((got & 0x7C00) != 0x7C00 || (got & 0x3FF) == 0) ++bad;
            continue;
        }
        if (got != want && ++bad < 10) ADD_FAILURE() << x << ": 0x" << std::hex << got << " vs 0x" << want;
        if (fp16_bits_to_fp32(got) != static_cast<float>(h) && ++bad < 10) ADD_FAILURE() << "decode " << x;
    }
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(fp32_to_fp16_bits(65519.0f), 0x7BFFu);
    EXPECT_EQ(fp32_to_fp16_bits(65520.0f), 0x7C00u);  // ties to even: Inf
}

TEST(HalfPrecision, Bf16RoundsHalfToEven) {
    EXPECT_EQ(fp32_to_bf16_bits(float_of(0x3F808000u)), 0x3F80u);  // tie, even stays
    EXPECT_EQ(fp32_to_bf16_bits(float_of(0x3F818000u)), 0x3F82u);  // tie, odd rounds up
    EXPECT_EQ(fp32_to_bf16_bits(float_of(0x3F808001u)), 0x3F81u);
    EXPECT_EQ(bf16_bits_to_fp32(0x3F80u), 1.0f);
    EXPECT_TRUE(std::isnan(bf16_bits_to_fp32(fp32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Microscaling, FloorScaleTakesTheExponentBits) {
    EXPECT_EQ(e8m0_floor(0.0f, 2), 0u);                 // clamp -127
    EXPECT_EQ(e8m0_floor(1.0f, 2), 125u);               // 2^(0-2)
    EXPECT_EQ(e8m0_floor(1.9999999f, 2), 125u);         // floor, never rounds up
    EXPECT_EQ(e8m0_floor(448.0f, 8), 127u);             // 2^(8-8)
    EXPECT_EQ(e8m0_floor(3.0e38f, 0), 254u);            // 2^127
    EXPECT_EQ(e8m0_floor(INFINITY, 2), kE8m0Nan);
    EXPECT_EQ(e8m0_floor(std::numeric_limits<float>::quiet_NaN(), 2), kE8m0Nan);
    EXPECT_EQ(e8m0_floor(1e-40f, 2), 0u);               // subnormal amax
    EXPECT_EQ(e8m0_to_float(0), std::ldexp(1.0f, -127));
    EXPECT_EQ(e8m0_to_float(127), 1.0f);
    EXPECT_EQ(e8m0_reciprocal(0), std::ldexp(1.0f, 127));
    EXPECT_EQ(e8m0_reciprocal(254), std::ldexp(1.0f, -127));
}

TEST(Microscaling, RoundUpScaleNeverClipsTheAmax) {
    EXPECT_EQ(e8m0_round_up(6.0f, 1.0f / 6.0f), 127u);  // exactly 1
    EXPECT_EQ(e8m0_round_up(6.5f, 1.0f / 6.0f), 128u);  // 2
    EXPECT_EQ(e8m0_round_up(0.0f, 1.0f / 6.0f), 0u);
    EXPECT_EQ(e8m0_round_up(INFINITY, 1.0f / 6.0f), kE8m0Nan);
}

// Bit patterns for the round-trip checks: a stride over all 2^32 and every pattern within 64 of
// each binade edge of float32 (so every binary16 and bfloat16 grid boundary is near one of them).
std::vector<uint32_t> round_trip_probes() {
    std::vector<uint32_t> p;
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) p.push_back(static_cast<uint32_t>(b));
    for (uint32_t e = 0; e < 256; ++e)
        for (uint32_t sign : {0u, 0x80000000u})
            for (int d = -64; d <= 64; ++d) p.push_back(sign | ((e << 23) + static_cast<uint32_t>(d)));
    for (float v : {65504.0f, 65519.0f, 65520.0f, 65536.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f})
        for (int d = -64; d <= 64; ++d) p.push_back(bits_of(v) + static_cast<uint32_t>(d));
    return p;
}

TEST(HalfPrecision, RoundTripsEqualEncodingThenDecoding) {
    size_t bad = 0;
    for (uint32_t u : round_trip_probes()) {
        const float x = float_of(u);
        const uint32_t fp16 = bits_of(fp16_round_trip(x)), fp16_want = bits_of(fp16_bits_to_fp32(fp32_to_fp16_bits(x)));
        const uint32_t bf16 = bits_of(bf16_round_trip(x)), bf16_want = bits_of(bf16_bits_to_fp32(fp32_to_bf16_bits(x)));
        if (fp16 != fp16_want && ++bad < 10)
            ADD_FAILURE() << "fp16 of 0x" << std::hex << u << ": 0x" << fp16 << " vs 0x" << fp16_want;
        if (bf16 != bf16_want && ++bad < 10)
            ADD_FAILURE() << "bf16 of 0x" << std::hex << u << ": 0x" << bf16 << " vs 0x" << bf16_want;
    }
    EXPECT_EQ(bad, 0u);
}

// The round-trip-free forms the CPU kernels use: rne_bounded and the MX tile's scale powers.
TEST(PortableBits, RneBoundedEqualsRneSmall) {
    std::vector<float> probes;
    for (int k = -4096 * 64; k <= 4096 * 64; ++k) probes.push_back(static_cast<float>(k) / 64.0f);  // ties included
    for (float v : {0.0f, -0.0f, 0.49999997f, -0.49999997f, 4194304.0f, -4194304.0f, 4194303.5f, 1e-40f, -1e-40f})
        probes.push_back(v);
    for (float v : probes) ASSERT_EQ(bits_of(rne_bounded(v)), bits_of(rne_small(v))) << v;
    EXPECT_TRUE(std::isnan(rne_bounded(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Microscaling, TileScalePowersEqualTheScaleByte) {
    for (unsigned byte = 0; byte < 255; ++byte) {
        const MxBlockScale k = mx_block_scale(static_cast<uint8_t>(byte));
        EXPECT_EQ(bits_of(mx_block_rcp(static_cast<uint8_t>(byte))), bits_of(k.rcp)) << byte;
        EXPECT_EQ(bits_of(mx_block_scale_value(static_cast<uint8_t>(byte))), bits_of(k.scale)) << byte;
    }
}

}  // namespace
}  // namespace ql::kernels
