// SPDX-License-Identifier: GPL-3.0-or-later
// The Layer Inspector's LLM.int8() account: which input features go to FP16 and how often.
#include <gtest/gtest.h>

#include <vector>

#include "engine/stats/llm_int8_decomposition.h"

namespace ql {
namespace {

TEST(LlmInt8Decomposition, CountsTheFeaturesAtOrAboveTheThresholdPerBatchAndPerToken) {
    // 4 tokens x 5 features: feature 1 reaches 6 in two tokens, feature 3 in one (as -7), the
    // 5.999 of feature 4 rounds to 6 in FP16 (as bitsandbytes compares FP16 values).
    const std::vector<float> x = {0.1f, 6.0f, 0.2f, 0.0f, 1.0f,   //
                                  0.3f, 9.0f, 0.1f, -7.0f, 2.0f,  //
                                  0.2f, 1.0f, 0.4f, 0.5f, 5.999f, //
                                  0.1f, 0.5f, 0.3f, 0.2f, 3.0f};
    const LlmInt8Decomposition d = llm_int8_decomposition(x.data(), 4, 5);
    EXPECT_EQ(d.threshold, 6.0);
    EXPECT_EQ(d.tokens, 4);
    EXPECT_EQ(d.columns, (std::vector<int64_t>{1, 3, 4}));
    EXPECT_EQ(d.column_token_share, (std::vector<double>{0.5, 0.25, 0.25}));
    EXPECT_DOUBLE_EQ(d.batch_flop_share, 3.0 / 5.0);
    EXPECT_DOUBLE_EQ(d.token_flop_share, 4.0 / 20.0);
    // A higher threshold keeps only feature 1's 9.
    const LlmInt8Decomposition high = llm_int8_decomposition(x.data(), 4, 5, 8.0);
    EXPECT_EQ(high.columns, (std::vector<int64_t>{1}));
    EXPECT_EQ(high.column_token_share, (std::vector<double>{0.25}));
}

}  // namespace
}  // namespace ql
