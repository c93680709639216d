// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/ops/from_blob.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/ptq/weight_grid.h"

namespace ql {
namespace {

// A weight with what makes scales interesting: normal values, large outliers, an all-zero row,
// an all-zero run of 64 in the middle of a row, a row of tiny values (NVFP4 block scales
// underflow there, asymmetric INT scales hit their 2^-126 floor), and a one-signed row.
at::Tensor test_weight(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::uniform_int_distribution<int64_t> pick(0, rows * cols - 1);
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = normal(rng);
    for (int k = 0; k < 6; ++k) v[static_cast<size_t>(pick(rng))] *= 40.0f;
    auto row = [&](int64_t r) { return v.begin() + r * cols; };
    if (rows > 1) std::fill(row(1), row(1) + cols, 0.0f);
    if (rows > 2 && cols >= 96) std::fill(row(2) + 32, row(2) + 96, 0.0f);
    if (rows > 3)
        for (auto it = row(3); it != row(3) + cols; ++it) *it *= 1e-7f;
    if (rows > 4)
        for (auto it = row(4); it != row(4) + cols; ++it) *it = std::fabs(*it);
    return at::from_blob(v.data(), {rows, cols}, at::kFloat).clone();
}

bool bits_equal(const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor x = a.contiguous(), y = b.contiguous();
    return x.sizes() == y.sizes() && x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat &&
           std::memcmp(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<size_t>(x.numel()) * sizeof(float)) == 0;
}

struct Case {
    std::string label;
    QuantOptions options;
};

QuantOptions make(const std::string& format, const std::string& granularity = "", int64_t group = 0, bool asym = false,
                  const std::string& mx_scale = "floor") {
    QuantOptions o;
    o.format = format;
    o.granularity = granularity;
    o.group_size = group;
    o.asymmetric = asym;
    o.mx_scale = mx_scale;
    return o;
}

// Every format GPTQ supports, with the settings the brief names.
std::vector<Case> all_cases(bool with_groups) {
    std::vector<Case> cases;
    for (const char* f : {"int8", "int4", "int3", "int2"})
        for (bool asym : {false, true}) {
            const std::string a = asym ? " asym" : " sym";
            cases.push_back({f + a + " tensor", make(f, "tensor", 0, asym)});
            cases.push_back({f + a + " channel", make(f, "channel", 0, asym)});
            if (with_groups)
                for (int64_t g : {32, 64, 128}) cases.push_back({f + a + " g" + std::to_string(g), make(f, "group", g, asym)});
        }
    cases.push_back({"nvfp4", make("nvfp4")});
    for (const char* f : {"mxfp4", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp8_e4m3", "mxfp8_e5m2", "mxint8"}) {
        cases.push_back({f, make(f)});
        cases.push_back({std::string(f) + " rceil", make(f, "", 0, false, "rceil")});
    }
    cases.push_back({"nf4", make("nf4")});
    for (const char* f : {"fp8_e4m3", "fp8_e5m2"}) {
        cases.push_back({std::string(f) + " tensor", make(f, "tensor")});
        cases.push_back({std::string(f) + " channel", make(f, "channel")});
    }
    for (const char* f : {"bf16", "fp16", "fp32"}) cases.push_back({f, make(f)});
    return cases;
}

TEST(WeightGrid, QuantizeOfTheReferenceEqualsFakeQuantizeBitForBitForEveryFormat) {
    // [48, 256]: groups and NF4 blocks inside rows; [6, 384]: 384 = 3 groups of 128, 6 NF4 blocks
    // per row.
    for (const auto& shape : std::vector<std::vector<int64_t>>{{48, 256}, {6, 384}}) {
        const at::Tensor w = test_weight(shape[0], shape[1], 11);
        for (const Case& c : all_cases(true)) {
            SCOPED_TRACE(c.label + " on [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + "]");
            const QuantSpec spec = resolve_spec(c.options, shape);
            EXPECT_TRUE(bits_equal(WeightGrid(w, spec).quantize(w), fake_quantize(w, spec)));
        }
    }
}

TEST(WeightGrid, ShapesWithTailsAndBlocksAcrossRowsMatchFakeQuantize) {
    // 100 columns: NVFP4 and MX rows end in a short block; NF4 blocks of 64 run across rows of the
    // flattened [7, 100] tensor and the last one is short. Group formats need divisibility
    // (resolve_spec) and are covered above. Also [1, 64] (a single channel) and [33, 16].
    for (const auto& shape : std::vector<std::vector<int64_t>>{{7, 100}, {1, 64}, {33, 16}}) {
        const at::Tensor w = test_weight(shape[0], shape[1], 5);
        for (const Case& c : all_cases(false)) {
            SCOPED_TRACE(c.label + " on [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + "]");
            const QuantSpec spec = resolve_spec(c.options, shape);
            EXPECT_TRUE(bits_equal(WeightGrid(w, spec).quantize(w), fake_quantize(w, spec)));
        }
    }
}

TEST(WeightGrid, ChannelScalesAlongTheInputAxisMatchFakeQuantize) {
    const at::Tensor w = test_weight(16, 64, 8);
    for (const char* f : {"int4", "fp8_e4m3"}) {
        QuantOptions o = make(f, "channel");
        o.axis = 1;
        const QuantSpec spec = resolve_spec(o, {16, 64});
        EXPECT_TRUE(bits_equal(WeightGrid(w, spec).quantize(w), fake_quantize(w, spec))) << f;
    }
}

TEST(WeightGrid, CalibratedFixedAmaxIsHonouredAsFakeQuantizeHonoursIt) {
    const at::Tensor w = test_weight(16, 128, 9);
    for (const Case& c : std::vector<Case>{{"int4 tensor", make("int4", "tensor")},
                                           {"int8 asym tensor", make("int8", "tensor", 0, true)},
                                           {"fp8_e4m3 tensor", make("fp8_e4m3", "tensor")},
                                           {"nvfp4", make("nvfp4")},
                                           {"int4 channel (ignored)", make("int4", "channel")},
                                           {"int4 g32 (ignored)", make("int4", "group", 32)}}) {
        SCOPED_TRACE(c.label);
        QuantSpec spec = resolve_spec(c.options, {16, 128});
        spec.fixed_amax = 0.03f;  // well inside the outliers: they clip
        const at::Tensor q = WeightGrid(w, spec).quantize(w);
        EXPECT_TRUE(bits_equal(q, fake_quantize(w, spec)));
    }
    QuantSpec spec = resolve_spec(make("int4", "tensor"), {16, 128});
    spec.fixed_amax = 0.03f;
    const float scale = 0.03f / 7.0f;
    EXPECT_EQ(WeightGrid(w, spec).quantize(w).abs().max().item<float>(), 7.0f * scale);
}

TEST(WeightGrid, AColumnQuantizedOnItsOwnEqualsThatColumnOfTheWholeMatrix) {
    const at::Tensor w = test_weight(24, 256, 21);
    for (const Case& c : all_cases(true)) {
        SCOPED_TRACE(c.label);
        const QuantSpec spec = resolve_spec(c.options, {24, 256});
        const WeightGrid grid(w, spec);
        const at::Tensor whole = grid.quantize(w);
        for (int64_t col : {0, 1, 31, 32, 100, 127, 128, 255}) {
            EXPECT_TRUE(bits_equal(grid.quantize_columns(w.narrow(1, col, 1), col), whole.narrow(1, col, 1))) << col;
            // The raw per-column path GPTQ uses, on a row range.
            const at::Tensor column = w.narrow(1, col, 1).contiguous();
            std::vector<float> y(24);
            grid.quantize_column(column.data_ptr<float>() + 5, y.data() + 5, col, 5, 19);
            for (int64_t r = 5; r < 19; ++r) EXPECT_EQ(y[r], whole[r][col].item<float>()) << col << "," << r;
        }
        EXPECT_TRUE(bits_equal(grid.quantize_columns(w.narrow(1, 96, 64), 96), whole.narrow(1, 96, 64)));
    }
}

// The largest magnitude each cell can hold, from the format's own encoder: values far outside
// the reference's range must land exactly there (saturation), with the sign of the input.
float cell_limit(const EncodedTensor& e, const QuantSpec& s, int64_t r, int64_t c, int64_t cols, bool positive) {
    const std::string& fam = s.info->family;
    const float* sc = e.scales.as<float>();
    const int64_t per_row = e.scales.shape.size() == 2 ? e.scales.shape[1] : 0;
    if (fam == "int") {
        const bool group = s.granularity == Granularity::Group;
        const int64_t i = group ? r * per_row + c / s.block : (s.granularity == Granularity::Channel ? r : 0);
        const float zp = s.asymmetric ? e.zero_points[static_cast<size_t>(i)] : 0.0f;
        const int bits = s.info->element_bits;
        const float hi = s.asymmetric ? static_cast<float>((1 << bits) - 1) : static_cast<float>((1 << (bits - 1)) - 1);
        const float lo = s.asymmetric ? 0.0f : -hi;
        return ((positive ? hi : lo) - zp) * sc[i];
    }
    float mag = 0;
    if (fam == "fp8") mag = s.info->element_max * sc[s.granularity == Granularity::Channel ? r : 0];
    if (fam == "nvfp4") mag = 6.0f * (sc[r * per_row + c / 16] * *e.global_scale);
    if (fam == "mx") mag = s.info->element_max * sc[r * per_row + c / s.block];
    if (fam == "nf4") mag = 1.0f * sc[(r * cols + c) / s.block];
    return positive ? mag : -mag;
}

TEST(WeightGrid, ValuesFarOutsideTheReferenceRangeSaturateAsTheFormatDoes) {
    const int64_t rows = 12, cols = 128;
    const at::Tensor w = test_weight(rows, cols, 4);
    // +1e6 at even positions, -1e6 at odd ones.
    at::Tensor big = at::empty({rows, cols}, at::kFloat);
    for (int64_t i = 0; i < rows * cols; ++i) big.data_ptr<float>()[i] = (i % 2 == 0) ? 1e6f : -1e6f;
    for (const Case& c : all_cases(true)) {
        const std::string fam = c.options.format;
        if (fam == "bf16" || fam == "fp16" || fam == "fp32") continue;
        SCOPED_TRACE(c.label);
        const QuantSpec spec = resolve_spec(c.options, {rows, cols});
        const EncodedTensor e = encode_buffer(w.data_ptr<float>(), {rows, cols}, spec);
        const at::Tensor q = WeightGrid(w, spec).quantize(big);
        int mismatches = 0;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t col = 0; col < cols; ++col) {
                const float expected = cell_limit(e, spec, r, col, cols, (r * cols + col) % 2 == 0);
                if (q[r][col].item<float>() != expected && ++mismatches < 4)
                    ADD_FAILURE() << "(" << r << "," << col << "): " << q[r][col].item<float>() << " != " << expected;
            }
        EXPECT_EQ(mismatches, 0);
    }
}

TEST(WeightGrid, UnsupportedFormatsAndBadShapesAreUserErrors) {
    const at::Tensor w = test_weight(8, 64, 1);
    for (const char* f : {"gguf_q4_0", "gguf_q8_0", "gguf_q4_1", "gguf_q5_0", "gguf_mxfp4"}) {
        try {
            WeightGrid(w, resolve_spec(make(f), {8, 64}));
            ADD_FAILURE() << f << " accepted";
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("GPTQ does not support ") + f), std::string::npos) << e.what();
        }
    }
    QuantOptions dq = make("nf4");
    dq.double_quant = true;
    EXPECT_THROW(WeightGrid(w, resolve_spec(dq, {8, 64})), UserError);
    const QuantSpec int4 = resolve_spec(make("int4", "group", 32), {8, 64});
    EXPECT_THROW(WeightGrid(w.reshape({512}), int4), UserError);
    EXPECT_THROW(WeightGrid(w, QuantSpec{}), UserError);
    const WeightGrid grid(w, int4);
    EXPECT_THROW(grid.quantize_columns(w.narrow(1, 0, 8), 60), UserError);   // past the last column
    EXPECT_THROW(grid.quantize_columns(w.narrow(0, 0, 4), 0), UserError);    // wrong row count
    EXPECT_THROW(grid.quantize_columns(w.narrow(1, 0, 8), -1), UserError);
    EXPECT_EQ(grid.quantize_columns(w.narrow(1, 0, 0), 64).size(1), 0);      // empty range at the end
}

}  // namespace
}  // namespace ql
