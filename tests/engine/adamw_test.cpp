// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <cmath>

#include "engine/train/adamw.h"
#include "engine/train/lr_schedule.h"

namespace ql {
namespace {

TEST(AdamW, FirstStepMatchesTheFormula) {
    // p = 1, g = 0.5, lr 0.1, wd 0.01: decay to 0.999, then the bias-corrected step is
    // lr * (0.05 / 0.1) / (sqrt(0.00025 / 0.001) + eps) = 0.1.
    at::Tensor p = at::ones({1}).requires_grad_(true);
    p.mutable_grad() = at::full({1}, 0.5);
    AdamW opt({p}, AdamWOptions{0.9, 0.999, 1e-8, 0.01});
    opt.step(0.1);
    EXPECT_NEAR(p.item<double>(), 0.999 - 0.1, 1e-6);
    EXPECT_EQ(opt.steps_taken(), 1);
}

TEST(AdamW, DecayIsDecoupledAndOptional) {
    at::Tensor a = at::full({1}, 2.0).requires_grad_(true), b = at::full({1}, 2.0).requires_grad_(true);
    a.mutable_grad() = at::zeros({1});
    b.mutable_grad() = at::zeros({1});
    AdamW opt({a, b}, AdamWOptions{0.9, 0.999, 1e-8, 0.5}, {true, false});
    opt.step(0.1);  // zero gradient: only the decay moves a
    EXPECT_NEAR(a.item<double>(), 2.0 * (1 - 0.05), 1e-6);
    EXPECT_NEAR(b.item<double>(), 2.0, 1e-9);
}

TEST(AdamW, MinimisesAQuadratic) {
    at::Tensor x = at::full({3}, 5.0).requires_grad_(true);
    AdamW opt({x}, AdamWOptions{0.9, 0.999, 1e-8, 0.0});
    for (int i = 0; i < 500; ++i) {
        opt.zero_grad();
        x.pow(2).sum().backward();
        opt.step(0.05);
    }
    EXPECT_LT(x.abs().max().item<double>(), 0.05);
}

TEST(AdamW, ClipGradNormScalesToTheLimit) {
    at::Tensor a = at::zeros({2}).requires_grad_(true), b = at::zeros({1}).requires_grad_(true);
    a.mutable_grad() = at::full({2}, 3.0);
    b.mutable_grad() = at::full({1}, std::sqrt(7.0));  // norm sqrt(9 + 9 + 7) = 5
    EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), 5.0, 1e-6);
    EXPECT_NEAR(std::sqrt(a.grad().pow(2).sum().item<double>() + b.grad().pow(2).sum().item<double>()), 1.0, 1e-5);
    EXPECT_NEAR(clip_grad_norm({a, b}, 10.0), 1.0, 1e-5);  // under the limit: unchanged
    EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-5);
}

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
    LrSchedule s{1.0, 10, 110, LrSchedule::Decay::Cosine, 0.1};
    EXPECT_NEAR(s.at(0), 0.1, 1e-12);
    EXPECT_NEAR(s.at(9), 1.0, 1e-12);
    EXPECT_NEAR(s.at(10), 1.0, 1e-12);
    EXPECT_NEAR(s.at(60), 0.55, 1e-12);  // half way: 0.1 + 0.9 * 0.5
    EXPECT_NEAR(s.at(110), 0.1, 1e-12);
    EXPECT_NEAR(s.at(500), 0.1, 1e-12);
    s.decay = LrSchedule::Decay::Linear;
    EXPECT_NEAR(s.at(35), 0.1 + 0.9 * 0.75, 1e-12);
    s.decay = LrSchedule::Decay::Constant;
    EXPECT_NEAR(s.at(100), 1.0, 1e-12);
}


// The fused update (one kernel pass, AdamWOptions::fused) against the ATen formula (fused =
// false) on the same parameters and gradients over ten steps: equal to float32 rounding (ATen
// contracts into FMAs and multiplies by reciprocals; the kernel does neither), with and
// without decay, a parameter without a gradient skipped, sizes that split unevenly over threads.
TEST(AdamW, FusedUpdateEqualsTheAtenFormulaToFloatRounding) {
    at::manual_seed(3);
    const std::vector<std::vector<int64_t>> shapes = {{192, 64}, {64}, {7, 3}, {100003}, {5}};
    std::vector<at::Tensor> fused, aten, initial;
    std::vector<bool> decay;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const at::Tensor init = at::randn(shapes[i]);
        initial.push_back(init);
        fused.push_back(init.clone().requires_grad_(true));
        aten.push_back(init.clone().requires_grad_(true));
        decay.push_back(i % 2 == 0);
    }
    AdamWOptions o{0.9, 0.98, 1e-8, 0.1};
    o.fused = true;
    AdamW a(fused, o, decay);
    o.fused = false;
    AdamW b(aten, o, decay);
    for (int step = 0; step < 10; ++step) {
        for (size_t i = 0; i < shapes.size(); ++i) {
            if (i == 3 && step == 4) {  // no gradient this step: skipped by both
                fused[i].mutable_grad().reset();
                aten[i].mutable_grad().reset();
                continue;
            }
            const at::Tensor g = at::randn(shapes[i]).mul(step % 3 == 0 ? 1e-3 : 1.0);
            fused[i].mutable_grad() = g.clone();
            aten[i].mutable_grad() = g.clone();
        }
        a.step(3e-3 * (1 + step));
        b.step(3e-3 * (1 + step));
        for (size_t i = 0; i < shapes.size(); ++i) {
            const double dp = fused[i].sub(aten[i]).abs().max().item<double>();
            // Moments to float32 rounding of their largest terms (m can cancel to near 0).
            const double dm = a.first_moments()[i].sub(b.first_moments()[i]).abs().max().item<double>() /
                              b.first_moments()[i].abs().max().item<double>();
            const double dv = a.second_moments()[i].sub(b.second_moments()[i]).abs().max().item<double>() /
                              b.second_moments()[i].abs().max().item<double>();
            EXPECT_LT(dp, 2e-6) << "parameter " << i << " step " << step;
            EXPECT_LT(dm, 1e-5) << "first moment " << i << " step " << step;
            EXPECT_LT(dv, 1e-5) << "second moment " << i << " step " << step;
        }
    }
    // Both moved every parameter by far more than they differ (ten steps of lr 3e-3 .. 3e-2).
    for (size_t i = 0; i < shapes.size(); ++i) {
        EXPECT_GT(fused[i].sub(initial[i]).abs().mean().item<double>(), 1e-2) << "parameter " << i;
        EXPECT_GT(aten[i].sub(initial[i]).abs().mean().item<double>(), 1e-2) << "parameter " << i;
    }
}

// The fused update writes through the data pointers, so it bumps each updated tensor's version
// as ATen's in-place ops do: the quantizers cache their fake-quantized weights by version, and
// without the bump a QAT run served the weights of the step before (found by
// QuantTrainer.AStoppedRunResumesBitExactly). A transposed (non-contiguous) parameter is updated
// through a contiguous copy to exactly the values a contiguous one gets.
TEST(AdamW, FusedUpdateBumpsVersionsAndIgnoresTheLayout) {
    at::manual_seed(5);
    const at::Tensor init = at::randn({48, 32});
    at::Tensor contiguous = init.clone().requires_grad_(true);
    at::Tensor transposed = init.t().contiguous().t().requires_grad_(true);  // same values, column-major
    ASSERT_FALSE(transposed.is_contiguous());
    AdamWOptions o{0.9, 0.98, 1e-8, 0.1};
    o.fused = true;
    AdamW a({contiguous}, o), b({transposed}, o);
    for (int step = 0; step < 3; ++step) {
        const at::Tensor g = at::randn({48, 32});
        contiguous.mutable_grad() = g.clone();
        transposed.mutable_grad() = g.t().contiguous().t();
        const auto va = contiguous._version(), vb = transposed._version();
        a.step(1e-2);
        b.step(1e-2);
        EXPECT_GT(contiguous._version(), va) << step;
        EXPECT_GT(transposed._version(), vb) << step;
        EXPECT_TRUE(at::equal(contiguous, transposed)) << step;
        EXPECT_TRUE(at::equal(a.first_moments()[0], b.first_moments()[0])) << step;
        EXPECT_TRUE(at::equal(a.second_moments()[0], b.second_moments()[0])) << step;
    }
    EXPECT_GT(contiguous.sub(init).abs().mean().item<double>(), 1e-3);
}

}  // namespace
}  // namespace ql
