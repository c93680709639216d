// SPDX-License-Identifier: GPL-3.0-or-later
// LLM.int8(): vector-wise INT8 rows, the outlier columns, and encode / decode against fake
// quantization (the bit-for-bit check against bitsandbytes is tests/app/cli_format_peers_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/llm_int8.h"

namespace ql::kernels {
namespace {

TEST(LlmInt8, RowsScaleByTheirAbsmaxThroughFp16) {
    // Row 0: absmax 2 -> step 2/127; row 1: all zero.
    const std::vector<float> x = {2.0f, -1.0f, 0.5f, 0.0f, 0, 0, 0, 0};
    std::vector<float> y(8);
    llm_int8_fake_quant(x.data(), y.data(), 2, 4, 0.0f);
    EXPECT_EQ(y[0], (127.0f * 2.0f) * static_cast<float>(1.0 / 127.0));
    EXPECT_EQ(y[1], (-64.0f * 2.0f) * static_cast<float>(1.0 / 127.0));  // -63.5 rounds half to even
    EXPECT_EQ(y[2], (32.0f * 2.0f) * static_cast<float>(1.0 / 127.0));   // 31.75
    for (int i = 4; i < 8; ++i) EXPECT_EQ(y[i], 0.0f);
    // FP16 first: 1 + 2^-12 is 1 in FP16, so it quantizes exactly as 1 does.
    const std::vector<float> a = {1.0f + 0x1p-12f, 1.0f};
    std::vector<int8_t> codes(2);
    float r = 0;
    uint8_t kept[2];
    llm_int8_encode(a.data(), 1, 2, 0.0f, codes.data(), &r, kept);
    EXPECT_EQ(r, 1.0f);
    EXPECT_EQ(codes[0], 127);
    EXPECT_EQ(codes[1], 127);
}

TEST(LlmInt8, ColumnsWithAnOutlierInAnyRowStayInFullPrecision) {
    // 3 tokens x 4 features; feature 2 has one value >= 6 (in token 1) and is kept for every token.
    const std::vector<float> x = {0.5f, -1.0f, 0.25f, 0.1f,   //
                                  0.2f, 0.3f, -6.5f, 0.375f,     //
                                  1.0f, 0.0f, 0.125f, -0.75f};
    std::vector<uint8_t> cols(4);
    EXPECT_EQ(llm_int8_outlier_columns(x.data(), 3, 4, kLlmInt8Threshold, cols.data()), 1);
    EXPECT_EQ(cols, (std::vector<uint8_t>{0, 0, 1, 0}));
    std::vector<float> y(12), back(12);
    llm_int8_fake_quant(x.data(), y.data(), 3, 4, kLlmInt8Threshold);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(y[i * 4 + 2], x[i * 4 + 2]) << i;
    // A row's absmax skips its outlier elements only (token 1: -6.5); values of the kept column
    // below the threshold count (token 0: 0.25, not its largest).
    std::vector<int8_t> codes(12);
    std::vector<float> r(3);
    llm_int8_encode(x.data(), 3, 4, kLlmInt8Threshold, codes.data(), r.data(), cols.data());
    EXPECT_EQ(r, (std::vector<float>{1.0f, 0.375f, 1.0f}));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(codes[i * 4 + 2], 0);
    llm_int8_decode(codes.data(), r.data(), 3, 4, back.data());
    for (int i = 0; i < 12; ++i)
        if (i % 4 != 2) EXPECT_EQ(back[i], y[i]) << i;
    // The same data without the decomposition: token 1's step is 6.5/127 and nothing is kept.
    llm_int8_fake_quant(x.data(), y.data(), 3, 4, 0.0f);
    EXPECT_NE(y[4 + 1], x[4 + 1]);
    EXPECT_EQ(y[4 + 2], -6.5f);
}

TEST(LlmInt8, NanStaysAndInfIsAnOutlierColumn) {
    const std::vector<float> x = {NAN, 1.0f, INFINITY, 0.5f};
    std::vector<float> y(4);
    llm_int8_fake_quant(x.data(), y.data(), 1, 4, kLlmInt8Threshold);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], (127.0f * 1.0f) * static_cast<float>(1.0 / 127.0));
    EXPECT_EQ(y[2], INFINITY);
    llm_int8_fake_quant(x.data(), y.data(), 1, 4, 0.0f);
    EXPECT_EQ(y[2], (127.0f * 1.0f) * static_cast<float>(1.0 / 127.0));  // saturates at +r
}

}  // namespace
}  // namespace ql::kernels
