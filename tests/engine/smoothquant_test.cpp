// SPDX-License-Identifier: GPL-3.0-or-later
// SmoothQuant scales (engine/ptq/smoothquant.h): the reference formula, its alpha edge cases,
// the equivalence of the smoothed layer and the W8A8 error it removes.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/ptq/smoothquant.h"

namespace ql {
namespace {

at::Tensor floats(std::vector<float> v, std::vector<int64_t> shape) {
    return at::from_blob(v.data(), shape, at::kFloat).clone();
}

TEST(SmoothQuant, ScalesFollowTheReferenceFormulaOverAllWeights) {
    const at::Tensor act = floats({4.0f, 0.25f, 0.0f, 9.0f}, {4});
    const at::Tensor w1 = floats({1, -2, 0.5f, 0, 0.5f, 1, -4, 0}, {2, 4});
    const at::Tensor w2 = floats({-3, 0.5f, 1, 0}, {1, 4});
    const at::Tensor s = smoothquant_scales(act, {w1, w2}, 0.5);
    ASSERT_EQ(s.scalar_type(), at::kFloat);
    ASSERT_EQ(s.sizes(), at::IntArrayRef({4}));
    // column maxima over both weights: 3, 2, 4, 0 -> 1e-5
    EXPECT_FLOAT_EQ(s[0].item<float>(), 2.0f / std::sqrt(3.0f));
    EXPECT_FLOAT_EQ(s[1].item<float>(), 0.5f / std::sqrt(2.0f));
    EXPECT_FLOAT_EQ(s[2].item<float>(), 1e-5f);  // zero activation channel: the final clamp
    EXPECT_FLOAT_EQ(s[3].item<float>(), 3.0f / std::sqrt(1e-5f));
}

TEST(SmoothQuant, AlphaZeroAndOneAreExact) {
    at::manual_seed(3);
    const at::Tensor act = at::rand({16}) * 10;
    const at::Tensor w = at::randn({8, 16});
    const at::Tensor wmax = std::get<0>(w.abs().max(0));
    EXPECT_TRUE(at::equal(smoothquant_scales(act, {w}, 0.0), 1.0 / wmax));
    EXPECT_TRUE(at::equal(smoothquant_scales(act, {w}, 1.0), act.clamp_min(1e-5)));
}

TEST(SmoothQuant, SmoothedLayerEqualsTheOriginalInFullPrecision) {
    at::manual_seed(4);
    at::Tensor x = at::randn({64, 32});
    x.select(1, 5).mul_(100);
    const at::Tensor w = at::randn({24, 32});
    const at::Tensor s = smoothquant_scales(x.abs().amax(0), {w}, 0.5);
    const at::Tensor y = at::matmul(x, w.t());
    const at::Tensor ys = at::matmul(x / s, (w * s).t());
    EXPECT_TRUE(at::allclose(ys, y, 1e-4, 1e-3)) << (ys - y).abs().max().item<float>();
}

// W8A8: int8 per-tensor activations (dynamic amax), int8 per-channel weights. One activation
// channel 100x larger dominates the activation scale; smoothing (alpha 0.5) moves it into the
// weights. Measured (seed 5): relative output error 6.3e-3 unsmoothed, 1.1e-4 smoothed (57x).
TEST(SmoothQuant, SmoothingCutsW8A8ErrorWithAnOutlierChannel) {
    at::manual_seed(5);
    at::Tensor x = at::randn({256, 128});
    x.select(1, 7).mul_(100);
    const at::Tensor w = at::randn({64, 128}) * 0.05;
    const at::Tensor y = at::matmul(x, w.t());
    QuantOptions act_q{"int8", "tensor"};
    QuantOptions w_q{"int8", "channel"};
    auto rel_error = [&](const at::Tensor& xs, const at::Tensor& ws) {
        const at::Tensor yq = at::matmul(fake_quantize(xs, act_q), fake_quantize(ws, w_q).t());
        return ((yq - y).pow(2).sum() / y.pow(2).sum()).item<double>();
    };
    const at::Tensor s = smoothquant_scales(x.abs().amax(0), {w}, 0.5);
    const double before = rel_error(x, w);
    const double after = rel_error(x / s, w * s);
    RecordProperty("rel_error_before", std::to_string(before));
    RecordProperty("rel_error_after", std::to_string(after));
    EXPECT_GT(before, 3e-3);
    EXPECT_LT(after, 5e-4);
    EXPECT_LT(after, before / 20);
}

TEST(SmoothQuant, BadShapesAndValuesAreUserErrors) {
    const at::Tensor act = at::ones({8});
    EXPECT_THROW(smoothquant_scales(act, {at::ones({4, 7})}, 0.5), UserError);        // in mismatch
    EXPECT_THROW(smoothquant_scales(act, {at::ones({8})}, 0.5), UserError);           // not 2-D
    EXPECT_THROW(smoothquant_scales(act, {at::ones({4, 8}), at::ones({4, 9})}, 0.5), UserError);
    EXPECT_THROW(smoothquant_scales(act, {}, 0.5), UserError);
    EXPECT_THROW(smoothquant_scales(at::ones({2, 4}), {at::ones({4, 4})}, 0.5), UserError);
    EXPECT_THROW(smoothquant_scales(act, {at::ones({4, 8})}, 1.5), UserError);
    EXPECT_THROW(smoothquant_scales(-act, {at::ones({4, 8})}, 0.5), UserError);
    EXPECT_THROW(smoothquant_scales(act, {at::full({4, 8}, NAN)}, 0.5), UserError);
    EXPECT_THROW(smoothquant_scales(at::ones({8}, at::kInt), {at::ones({4, 8})}, 0.5), UserError);
}

}  // namespace
}  // namespace ql
