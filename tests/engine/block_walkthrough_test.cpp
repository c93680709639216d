// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cmath>

#include "engine/api/block_walkthrough.h"
#include "engine/core/errors.h"
#include "engine/api/fake_quant_api.h"
#include "engine/core/format_catalog.h"

namespace ql {
namespace {

TEST(BlockWalkthrough, OutputEqualsTheEnginesFakeQuantForEveryFormat) {
    for (const auto& f : all_formats()) {
        const int n = f.block_size > 0 ? static_cast<int>(f.block_size) : 32;
        std::vector<float> block(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) block[i] = std::sin(0.7f * i) * (i == 5 ? 9.0f : 1.3f);
        QuantOptions o;
        o.format = f.name;
        if (f.family == "int") o.granularity = "group", o.group_size = n;
        const BlockWalkthrough w = explain_block(block, o, NAN);
        FakeQuantRequest r;
        r.input = NdArray::from_floats(block, {n});
        r.options = o;
        const auto fq = run_fake_quant(r);
        for (int i = 0; i < n; ++i) ASSERT_EQ(w.output[i], fq.values.as<float>()[i]) << f.name << " " << i;
        EXPECT_FALSE(w.steps.empty()) << f.name;
        if (f.name != "fp32") EXPECT_EQ(w.codes.size(), static_cast<size_t>(n)) << f.name;
        EXPECT_EQ(w.grid.size(), f.element_values.size()) << f.name;
    }
}

TEST(BlockWalkthrough, MoreThanOneBlockIsRejected) {
    QuantOptions o;
    o.format = "nvfp4";
    EXPECT_THROW(explain_block(std::vector<float>(17, 1.0f), o, NAN), UserError);
    o.format = "mxfp4";
    EXPECT_NO_THROW(explain_block(std::vector<float>(20, 1.0f), o, NAN));  // a short block is padded
}

TEST(BlockWalkthrough, Nvfp4StepsShowTheScaleChain) {
    std::vector<float> block(16, 0.5f);
    block[0] = 6.0f;
    QuantOptions o;
    o.format = "nvfp4";
    const BlockWalkthrough w = explain_block(block, o, 6.0f);
    EXPECT_FLOAT_EQ(w.global_scale, 6.0f / 2688.0f);
    EXPECT_EQ(w.code_bits[0], "0 11 1");  // 6.0
    bool has_e4m3 = false;
    for (const auto& s : w.steps) has_e4m3 |= s.label == "E4M3 block scale";
    EXPECT_TRUE(has_e4m3);
    EXPECT_NEAR(w.scale, 1.0, 1e-6);
}

}  // namespace
}  // namespace ql
