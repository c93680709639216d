// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/from_blob.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/saturation_mask.h"
#include "engine/quant/straight_through.h"
#include "user_error_text.h"

namespace ql {
namespace {

// Normal values with a few outliers, some tiny negatives (they quantize to -0.0 in several
// formats, which a q + (x - x.detach()) formulation would turn into +0.0) and an all-zero group.
at::Tensor test_input(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = normal(rng);
    for (size_t i = 0; i < v.size(); i += 37) v[i] *= 8.0f;
    for (size_t i = 5; i < v.size(); i += 11) v[i] = -1e-6f;
    for (int64_t i = 0; i < std::min<int64_t>(cols, 32); ++i) v[static_cast<size_t>(cols + i)] = 0.0f;
    return at::from_blob(v.data(), {rows, cols}, at::kFloat).clone();
}

at::Tensor floats(const std::vector<float>& v) {
    return at::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, at::kFloat).clone();
}

// Bit patterns equal (so -0.0 != +0.0 and NaNs compare by payload).
bool bits_equal(const at::Tensor& a, const at::Tensor& b) {
    return a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat && a.sizes() == b.sizes() &&
           at::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

QuantSpec spec_for(const QuantOptions& o, const at::Tensor& x, float fixed_amax = std::nanf("")) {
    QuantSpec s = resolve_spec(o, shape_of(x));
    s.fixed_amax = fixed_amax;
    return s;
}

struct Case {
    std::string label;
    QuantOptions options;
    float fixed_amax;
};

std::vector<Case> format_cases() {
    const float none = std::nanf("");
    return {
        {"int4 group 32", {"int4", "group", 32}, none},
        {"int8 channel", {"int8", "channel"}, none},
        {"int4 asym tensor, fixed amax", QuantOptions{"int4", "tensor", 0, 0, true}, 2.5f},
        {"nvfp4, fixed amax", {"nvfp4"}, 3.0f},
        {"nvfp4", {"nvfp4"}, none},
        {"mxfp4", {"mxfp4"}, none},
        {"mxfp4 rceil", QuantOptions{"mxfp4", "", 0, 0, false, false, "rceil"}, none},
        {"mxint8", {"mxint8"}, none},
        {"fp8_e4m3", {"fp8_e4m3"}, none},
        {"fp8_e4m3, fixed amax", {"fp8_e4m3"}, 2.0f},
        {"nf4", {"nf4"}, none},
        {"bf16", {"bf16"}, none},
    };
}

// sum(w * y) with a fixed random w; returns w.
at::Tensor backward_weighted_sum(const at::Tensor& y, uint32_t seed) {
    const at::Tensor w = test_input(y.size(0), y.size(1), seed);
    (w * y).sum().backward();
    return w;
}

TEST(FakeQuantizeSte, ForwardEqualsFakeQuantizeBitForBit) {
    for (const Case& c : format_cases()) {
        for (bool clip : {false, true}) {
            const at::Tensor x = test_input(8, 64, 1).requires_grad_(true);
            const QuantSpec s = spec_for(c.options, x, c.fixed_amax);
            const at::Tensor y = fake_quantize_ste(x, s, SteOptions{clip});
            EXPECT_TRUE(y.requires_grad()) << c.label;
            EXPECT_TRUE(bits_equal(y, fake_quantize(x.detach(), s))) << c.label << " clip " << clip;
        }
    }
    // The -0.0 outputs are really there, so the test above checks their sign.
    const at::Tensor x = test_input(8, 64, 1);
    const at::Tensor q = fake_quantize(x, spec_for({"int4", "group", 32}, x));
    EXPECT_TRUE(at::signbit(q).logical_and(q == 0).any().item<bool>());
}

TEST(FakeQuantizeSte, GradientIsTheIdentity) {
    for (const Case& c : format_cases()) {
        const at::Tensor x = test_input(8, 64, 1).requires_grad_(true);
        const at::Tensor w = backward_weighted_sum(fake_quantize_ste(x, spec_for(c.options, x, c.fixed_amax)), 2);
        EXPECT_TRUE(at::equal(x.grad(), w)) << c.label;
    }
}

TEST(FakeQuantizeSte, ClipGradientKeepsEverythingWhenScalesComeFromTheTensorItself) {
    // Per-group / per-channel INT, per-tensor FP8 and NF4 scale by x's own amax: nothing saturates.
    for (const QuantOptions& o : {QuantOptions{"int4", "group", 32}, QuantOptions{"int8", "channel"},
                                  QuantOptions{"int4", "tensor", 0, 0, true}, QuantOptions{"fp8_e5m2"},
                                  QuantOptions{"nf4"}, QuantOptions{"mxfp4", "", 0, 0, false, false, "rceil"}}) {
        const at::Tensor x = test_input(8, 64, 3).requires_grad_(true);
        const at::Tensor w = backward_weighted_sum(fake_quantize_ste(x, spec_for(o, x), SteOptions{true}), 4);
        EXPECT_TRUE(at::equal(x.grad(), w)) << o.format;
    }
}

// x [1, n] with grad through fake_quantize_ste(clip) and w = 1, 2, 3, ...: returns x.grad / w, the
// 0/1 mask, after checking the forward against fake_quantize.
std::vector<float> clipped_mask(const std::vector<float>& values, const QuantOptions& o, float fixed_amax) {
    const at::Tensor x = floats(values).reshape({1, -1}).requires_grad_(true);
    const QuantSpec s = spec_for(o, x, fixed_amax);
    const at::Tensor y = fake_quantize_ste(x, s, SteOptions{true});
    EXPECT_TRUE(bits_equal(y, fake_quantize(x.detach(), s)));
    const at::Tensor w = at::arange(1, x.numel() + 1, at::kFloat).reshape({1, -1});
    (w * y).sum().backward();
    const at::Tensor mask = x.grad() / w;
    EXPECT_TRUE(at::equal(x.grad(), w * mask));
    return std::vector<float>(mask.data_ptr<float>(), mask.data_ptr<float>() + mask.numel());
}

TEST(FakeQuantizeSte, IntegerWithFixedAmaxClipsBeyondIt) {
    const float above = std::nextafter(1.0f, 2.0f), below = std::nextafter(1.0f, 0.0f);
    const std::vector<float> x = {-3.0f, -above, -1.0f, -below, 0.0f, 0.4f, below, 1.0f, above, 1.5f};
    const std::vector<float> expected = {0, 0, 1, 1, 1, 1, 1, 1, 0, 0};
    EXPECT_EQ(clipped_mask(x, {"int8"}, 1.0f), expected);
    EXPECT_EQ(clipped_mask(x, {"int4"}, 1.0f), expected);
    EXPECT_EQ(clipped_mask(x, QuantOptions{"int4", "tensor", 0, 0, true}, 1.0f), expected);  // range [-1, 1]
    EXPECT_EQ(clipped_mask(x, {"fp8_e4m3"}, 1.0f), expected);
    // Without a fixed amax the per-tensor amax is the tensor's own: nothing clips.
    EXPECT_EQ(clipped_mask(x, {"int4"}, std::nanf("")), std::vector<float>(x.size(), 1.0f));
}

TEST(FakeQuantizeSte, Nvfp4WithFixedAmaxClipsAboveSixTimes448TimesG) {
    // fixed amax 2688 = 6 * 448: g = 1. A block with amax 3000 wants scale 500, which saturates
    // at E4M3's 448, so d = 448 and the limit is 6 * 448 = 2688: 2688 itself stays, the next float
    // clips (2688.0002 / 448 rounds above 6).
    std::vector<float> x(16, 1.0f);
    x[0] = 3000.0f;
    x[1] = 2688.0f;
    x[2] = std::nextafter(2688.0f, 3000.0f);
    x[3] = std::nextafter(2688.0f, 0.0f);
    x[4] = -2689.0f;
    x[5] = -2688.0f;
    std::vector<float> expected(16, 1.0f);
    expected[0] = expected[2] = expected[4] = 0.0f;
    EXPECT_EQ(clipped_mask(x, {"nvfp4"}, 2688.0f), expected);
    // Within the block's own scale nothing clips: with amax = the tensor's (3000), same block.
    EXPECT_EQ(clipped_mask(x, {"nvfp4"}, std::nanf("")), std::vector<float>(16, 1.0f));
}

TEST(FakeQuantizeSte, Nvfp4BlockMaximumClipsWhenItsE4m3ScaleRoundsDown) {
    // g = 1 again; block amax 6.36: s = 1.06 rounds down to E4M3 1.0, so d = 1 and 6.36 lies
    // beyond 6 * d (it dequantizes to 6). This happens with the tensor's own amax too.
    std::vector<float> x(16, 0.5f);
    x[0] = 6.36f;
    x[1] = 6.0f;
    x[2] = std::nextafter(6.0f, 7.0f);
    x[3] = -6.2f;
    std::vector<float> expected(16, 1.0f);
    expected[0] = expected[2] = expected[3] = 0.0f;
    EXPECT_EQ(clipped_mask(x, {"nvfp4"}, 2688.0f), expected);
    // A second block whose scale underflows (block amax 1e-4: s = 1.7e-5 rounds to E4M3 0)
    // dequantizes to zeros: underflow, not saturation, so the gradient passes.
    std::vector<float> two(x);
    two.resize(32, 1e-4f);
    std::vector<float> expected_two(expected);
    expected_two.resize(32, 1.0f);
    EXPECT_EQ(clipped_mask(two, {"nvfp4"}, 2688.0f), expected_two);
    const at::Tensor t = floats(two).reshape({1, 32});
    EXPECT_TRUE(at::equal(fake_quantize(t, spec_for({"nvfp4"}, t, 2688.0f)).slice(1, 16), at::zeros({1, 16})));
}

TEST(FakeQuantizeSte, MxFloorClipsTheBlockMaximumRceilDoesNot) {
    // Block amax 7: floor rule X = 2^(floor(log2 7) - 2) = 1, so E2M1 saturates above 6.
    std::vector<float> x(32, 1.0f);
    x[0] = 7.0f;
    x[1] = 6.0f;
    x[2] = std::nextafter(6.0f, 7.0f);
    x[3] = -6.5f;
    x[4] = 5.0f;
    std::vector<float> expected(32, 1.0f);
    expected[0] = expected[2] = expected[3] = 0.0f;
    EXPECT_EQ(clipped_mask(x, {"mxfp4"}, std::nanf("")), expected);
    // rceil: X = 2^ceil(log2(7 / 6)) = 2, 7 / 2 = 3.5 is inside.
    EXPECT_EQ(clipped_mask(x, QuantOptions{"mxfp4", "", 0, 0, false, false, "rceil"}, std::nanf("")),
              std::vector<float>(32, 1.0f));
    // MXINT8: elements up to 127/64 * X; amax 7 -> X = 4 (emax 0), limit 7.9375: nothing clips.
    EXPECT_EQ(clipped_mask(x, {"mxint8"}, std::nanf("")), std::vector<float>(32, 1.0f));
}

TEST(FakeQuantizeSte, WithoutGradItIsFakeQuantize) {
    const at::Tensor x = test_input(4, 64, 5);
    const QuantSpec s = spec_for({"nvfp4"}, x);
    const at::Tensor y = fake_quantize_ste(x, s, SteOptions{true});
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(bits_equal(y, fake_quantize(x, s)));
    const at::Tensor xg = x.clone().requires_grad_(true);
    at::NoGradGuard no_grad;
    const at::Tensor z = fake_quantize_ste(xg, s);
    EXPECT_FALSE(z.requires_grad());
    EXPECT_TRUE(bits_equal(z, fake_quantize(x, s)));
}

TEST(FakeQuantizeSte, OtherDtypesGiveFloat32AndGradientsInTheirOwnDtype) {
    const at::Tensor x = test_input(4, 64, 6).to(at::kDouble).requires_grad_(true);
    const QuantSpec s = spec_for({"int4", "group", 32}, x);
    const at::Tensor y = fake_quantize_ste(x, s);
    EXPECT_TRUE(bits_equal(y, fake_quantize(x.detach(), s)));
    const at::Tensor w = backward_weighted_sum(y, 7);
    EXPECT_EQ(x.grad().scalar_type(), at::kDouble);
    EXPECT_TRUE(at::equal(x.grad(), w.to(at::kDouble)));
}

TEST(FakeQuantizeSte, NonFiniteElementsKeepTheForwardAndGetNoGradient) {
    const float inf = std::numeric_limits<float>::infinity();
    const at::Tensor x = floats({inf, -inf, 0.5f, -0.25f, std::nanf(""), 1.0f, 0.0f, 2.0f}).reshape({1, 8}).requires_grad_(true);
    const QuantSpec s = spec_for({"int8"}, x);
    const at::Tensor y = fake_quantize_ste(x, s);
    EXPECT_TRUE(bits_equal(y, fake_quantize(x.detach(), s)));
    (y * at::arange(1, 9, at::kFloat)).sum().backward();
    EXPECT_TRUE(at::equal(x.grad(), floats({0, 0, 3, 4, 0, 6, 7, 8}).reshape({1, 8})));
}

TEST(FakeQuantizeSte, GgufClipGradientIsRefusedPlainSteWorks) {
    const at::Tensor x = test_input(2, 64, 8).requires_grad_(true);
    const QuantSpec s = spec_for({"gguf_q4_0"}, x);
    EXPECT_NE(test::user_error_text([&] { fake_quantize_ste(x, s, SteOptions{true}); }).find("gguf_q4_0"),
              std::string::npos);
    EXPECT_TRUE(bits_equal(fake_quantize_ste(x, s), fake_quantize(x.detach(), s)));
}

TEST(FakeQuantizeSte, IntegerInputIsRefused) {
    const at::Tensor x = at::ones({2, 32}, at::kInt);
    const QuantSpec s = resolve_spec({"int8"}, shape_of(x));
    EXPECT_NE(test::user_error_text([&] { fake_quantize_ste(x, s); }), "no error");
    EXPECT_NE(test::user_error_text([&] { saturated_elements(x, s); }), "no error");
}

}  // namespace
}  // namespace ql
