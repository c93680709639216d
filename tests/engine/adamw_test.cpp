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

}  // namespace
}  // namespace ql
