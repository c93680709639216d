// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/element_code.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/format_catalog.h"

namespace ql {
namespace {

TEST(ElementCode, E4M3LargestValueIsExponent15Mantissa6) {
    const FormatInfo& f = format_info("fp8_e4m3");
    const ElementCode c = encodeElementValue(f, 448.0);
    ASSERT_TRUE(c.valid) << c.error.toStdString();
    EXPECT_EQ(c.bits, "0 1111 110");
    EXPECT_EQ(c.fields[1].meaning, QString::fromUtf8("15 \u2212 7 = 8"));
    EXPECT_EQ(c.fields[2].meaning, "1 + 6/8 = 1.75");
    EXPECT_DOUBLE_EQ(c.value, 448.0);
}

TEST(ElementCode, E4M3SmallestSubnormalHasZeroExponentField) {
    const FormatInfo& f = format_info("fp8_e4m3");
    const ElementCode c = encodeElementValue(f, std::ldexp(1.0, -9));
    ASSERT_TRUE(c.valid);
    EXPECT_EQ(c.bits, "0 0000 001");
    EXPECT_TRUE(c.fields[1].meaning.contains("subnormal"));
    EXPECT_EQ(c.fields[2].meaning, "0 + 1/8 = 0.125");
}

TEST(ElementCode, E4M3AllOnesIsNaN) {
    const ElementCode c = decodeElementBits(format_info("fp8_e4m3"), "1 1111 111");
    ASSERT_TRUE(c.valid);
    EXPECT_TRUE(std::isnan(c.value));
}

TEST(ElementCode, E5M2AllOnesExponentIsInfinity) {
    const ElementCode c = decodeElementBits(format_info("fp8_e5m2"), "1 11111 00");
    ASSERT_TRUE(c.valid);
    EXPECT_TRUE(std::isinf(c.value));
    EXPECT_LT(c.value, 0);
}

TEST(ElementCode, E2M1DecodesEveryCodeOfTheSpecTable) {
    // FORMATS.md: E2M1 values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, code = sign<<3 | index.
    const FormatInfo& f = format_info("nvfp4");
    const double expected[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned code = 0; code < 16; ++code) {
        const QString bits = QString::number(code, 2).rightJustified(4, '0');
        const ElementCode c = decodeElementBits(f, bits);
        ASSERT_TRUE(c.valid) << bits.toStdString();
        EXPECT_EQ(c.value, (code & 8 ? -1 : 1) * expected[code & 7]) << bits.toStdString();
    }
}

TEST(ElementCode, Int4IsTwosComplement) {
    const FormatInfo& f = format_info("int4");
    const ElementCode c = encodeElementValue(f, -7.0);
    ASSERT_TRUE(c.valid);
    EXPECT_EQ(c.bits, "1 001");
    EXPECT_EQ(c.result, QString::fromUtf8("\u22128 + 1 = \u22127"));
}

TEST(ElementCode, MxInt8ValuesAreSixtyFourths) {
    const FormatInfo& f = format_info("mxint8");
    const ElementCode c = encodeElementValue(f, -3.0 / 64.0);
    ASSERT_TRUE(c.valid) << c.error.toStdString();
    EXPECT_EQ(c.bits, "1 1111101");
    EXPECT_DOUBLE_EQ(c.value, -3.0 / 64.0);
}

TEST(ElementCode, GgufQ4_0StoresUnsignedWithOffsetEight) {
    const FormatInfo& f = format_info("gguf_q4_0");
    const ElementCode c = decodeElementBits(f, "1101");
    ASSERT_TRUE(c.valid);
    EXPECT_EQ(c.value, 5.0);
    EXPECT_EQ(c.fields.size(), 1);
    EXPECT_EQ(c.result, QString::fromUtf8("q \u2212 8 = 5"));
}

TEST(ElementCode, Nf4IndexSelectsTheCodebookEntry) {
    const FormatInfo& f = format_info("nf4");
    const ElementCode c = decodeElementBits(f, "0111");
    ASSERT_TRUE(c.valid);
    EXPECT_EQ(c.value, f.element_values[7]);
    EXPECT_EQ(c.value, 0.0);
}

TEST(ElementCode, EveryElementValueOfEveryFormatRoundTrips) {
    for (const FormatInfo& f : all_formats()) {
        for (float v : f.element_values) {
            const ElementCode c = encodeElementValue(f, v);
            ASSERT_TRUE(c.valid) << f.name << " " << v << ": " << c.error.toStdString();
            EXPECT_EQ(static_cast<float>(c.value), v) << f.name;
            const ElementCode back = decodeElementBits(f, c.bits);
            EXPECT_EQ(back.bits, c.bits) << f.name;
        }
    }
}

TEST(ElementCode, WrongBitCountIsAnErrorNotACrash) {
    const ElementCode c = decodeElementBits(format_info("nvfp4"), "1 0");
    EXPECT_FALSE(c.valid);
    EXPECT_FALSE(c.error.isEmpty());
}

TEST(ElementCode, Fp16LargestFiniteValue) {
    const FormatInfo& f = format_info("fp16");
    const ElementCode c = encodeElementValue(f, 65504.0);
    ASSERT_TRUE(c.valid);
    EXPECT_EQ(c.bits, "0 11110 1111111111");
}

}  // namespace
}  // namespace ql
