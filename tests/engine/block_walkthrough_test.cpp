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
        if (f.requires_importance) r.importance.assign(static_cast<size_t>(n), 1.0f);  // what the walkthrough uses
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

TEST(BlockWalkthrough, SuperBlockFormatsShowSubBlocksScalesAndTheSearch) {
    std::vector<float> block(256);
    for (int i = 0; i < 256; ++i) block[i] = std::sin(0.37f * i) * (1.0f + 0.01f * i) + (i == 70 ? 6.0f : 0.0f);
    for (const char* name : {"gguf_q2_k", "gguf_q3_k", "gguf_q4_k", "gguf_q5_k", "gguf_q6_k", "gguf_iq4_xs", "gguf_iq4_nl"}) {
        SCOPED_TRACE(name);
        QuantOptions o;
        o.format = name;
        const FormatInfo& f = format_info(name);
        const std::vector<float> x(block.begin(), block.begin() + f.block_size);
        const int selected = std::string(name) == "gguf_iq4_nl" ? 0 : 2;
        const BlockWalkthrough w = explain_block(x, o, NAN, selected);
        const SuperBlockWalkthrough& sb = w.super_block;
        ASSERT_TRUE(sb.present);
        const int subs = static_cast<int>(f.block_size / sb.sub_block_length);
        ASSERT_EQ(static_cast<int>(sb.sub_blocks.size()), subs);
        EXPECT_EQ(sb.search_sub_block, selected);
        EXPECT_FALSE(sb.search.empty());
        EXPECT_FALSE(sb.search_method.empty());
        // The stored integers and scales are the encoded block's (fake quantization's) own.
        FakeQuantRequest r;
        r.input = NdArray::from_floats(x, {f.block_size});
        r.options = o;
        r.want_scales = true;
        const auto fq = run_fake_quant(r);
        const float* sc = fq.scales->as<float>();
        for (int j = 0; j < subs; ++j) {
            const WalkthroughSubBlock& s = sb.sub_blocks[static_cast<size_t>(j)];
            EXPECT_EQ(s.first, j * sb.sub_block_length);
            EXPECT_EQ(s.scale, sb.has_min ? sc[2 * j] : sc[j]) << j;
            if (sb.has_min) EXPECT_EQ(s.min, sc[2 * j + 1]) << j;
            EXPECT_GE(s.stored_scale, sb.scale_bits == 8 ? -128 : 0);
            EXPECT_LT(s.stored_scale, 1 << sb.scale_bits);
        }
        // The last accepted candidate is the search's result.
        double last = NAN;
        for (const auto& c : sb.search)
            if (c.accepted) last = c.scale;
        EXPECT_EQ(last, sb.sub_blocks[static_cast<size_t>(selected)].search_scale);
        // Each element's domain value is (x + min) / scale of its own sub-block.
        const WalkthroughSubBlock& s = sb.sub_blocks[static_cast<size_t>(selected)];
        const int i = s.first + 3;
        EXPECT_FLOAT_EQ(w.scaled[static_cast<size_t>(i)], static_cast<float>((x[i] + s.min) / s.scale));
        EXPECT_EQ(w.grid.size(), f.element_values.size());
        EXPECT_EQ(w.scale, s.scale);
    }
    // A short sample is padded as fake quantization pads it.
    QuantOptions o;
    o.format = "gguf_q4_k";
    const BlockWalkthrough w = explain_block(std::vector<float>(block.begin(), block.begin() + 40), o, NAN);
    EXPECT_EQ(w.codes.size(), 40u);
    EXPECT_EQ(w.super_block.sub_blocks.size(), 8u);
}

}  // namespace
}  // namespace ql
