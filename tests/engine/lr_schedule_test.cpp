// SPDX-License-Identifier: GPL-3.0-or-later
// Warmup-stable-decay and the fused / classic FP-then-QAT schedules (engine/train/lr_schedule.h,
// engine/train/qat_lr_schedule.h): exact rates at phase boundaries, the QAT start step, LR
// continuity of cooldown fusion, parsing and bad inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/train/lr_schedule.h"
#include "engine/train/qat_lr_schedule.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

using test::user_error_text;

TEST(WsdSchedule, WarmupPlateauAndLinearDecayHitExactValuesAtTheBoundaries) {
    // W = 10, T = 100, K = 20: decay steps 80..99.
    const WsdSchedule s{2.0, 10, 100, 20, DecayShape::Linear, 0.1};
    s.validate();
    EXPECT_EQ(s.decay_start(), 80);
    EXPECT_DOUBLE_EQ(s.at(0), 0.2);          // first warm-up step: p / W
    EXPECT_DOUBLE_EQ(s.at(4), 1.0);
    EXPECT_DOUBLE_EQ(s.at(9), 2.0);          // last warm-up step: p
    EXPECT_DOUBLE_EQ(s.at(10), 2.0);         // plateau
    EXPECT_DOUBLE_EQ(s.at(79), 2.0);         // last plateau step
    EXPECT_DOUBLE_EQ(s.at(80), 2.0 * (0.1 + 0.9 * (1.0 - 1.0 / 20.0)));  // first decay step
    EXPECT_DOUBLE_EQ(s.at(89), 2.0 * (0.1 + 0.9 * 0.5));                 // half way
    EXPECT_DOUBLE_EQ(s.at(99), 0.2);         // last step: final_fraction * p
    EXPECT_DOUBLE_EQ(s.at(100), 0.2);        // past the end: held at the floor
    EXPECT_DOUBLE_EQ(s.at(1000), 0.2);
}

TEST(WsdSchedule, CosineDecayEndsAtTheFloorAndIsMonotone) {
    const WsdSchedule s{1.0, 0, 50, 10, DecayShape::Cosine, 0.0};
    s.validate();
    EXPECT_DOUBLE_EQ(s.at(0), 1.0);  // no warm-up: starts at peak
    EXPECT_DOUBLE_EQ(s.at(39), 1.0);
    EXPECT_DOUBLE_EQ(s.at(40), 0.5 * (1.0 + std::cos(M_PI * 0.1)));
    EXPECT_NEAR(s.at(44), 0.5, 1e-15);  // t = 0.5
    EXPECT_DOUBLE_EQ(s.at(49), 0.0);
    for (int64_t i = 1; i < 50; ++i) EXPECT_LE(s.at(i), s.at(i - 1)) << i;
}

TEST(WsdSchedule, DecayFractionRoundsToSteps) {
    const WsdSchedule s = WsdSchedule::with_decay_fraction(1e-3, 5, 1000, 0.2);
    EXPECT_EQ(s.decay_steps, 200);
    EXPECT_EQ(s.decay_start(), 800);
    EXPECT_EQ(s.shape, DecayShape::Linear);
    EXPECT_DOUBLE_EQ(s.final_fraction, 0.0);
    EXPECT_EQ(WsdSchedule::with_decay_fraction(1.0, 0, 7, 0.5).decay_steps, 4);  // 3.5 rounds away from zero
    const WsdSchedule none{1.0, 3, 10, 0, DecayShape::Linear, 0.0};  // K = 0: warm-up then constant
    none.validate();
    EXPECT_DOUBLE_EQ(none.at(9), 1.0);
    EXPECT_DOUBLE_EQ(none.at(10), 0.0);  // past the end: the floor
}

TEST(WsdSchedule, BadInputsNameTheField) {
    EXPECT_EQ(user_error_text([] { WsdSchedule{1.0, 10, 100, 91, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: decay steps must be in [0, total steps - warm-up steps = 90], got 91");
    EXPECT_EQ(user_error_text([] { WsdSchedule{0.0, 0, 10, 1, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: peak learning rate must be a positive finite number, got 0.000000");
    EXPECT_EQ(user_error_text([] { WsdSchedule{1.0, 0, 0, 0, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: total steps must be at least 1, got 0");
    EXPECT_EQ(user_error_text([] { WsdSchedule{1.0, 11, 10, 0, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: warm-up steps must be in [0, total steps = 10], got 11");
    EXPECT_EQ(user_error_text([] { WsdSchedule{1.0, 0, 10, -1, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: decay steps must be in [0, total steps - warm-up steps = 10], got -1");
    EXPECT_EQ(user_error_text([] { WsdSchedule{1.0, 0, 10, 2, DecayShape::Linear, 1.5}.validate(); }),
              "wsd schedule: final fraction must be in [0, 1], got 1.500000");
    EXPECT_EQ(user_error_text([] { WsdSchedule{NAN, 0, 10, 2, DecayShape::Linear, 0.0}.validate(); }),
              "wsd schedule: peak learning rate must be a positive finite number, got nan");
    EXPECT_EQ(user_error_text([] { WsdSchedule::with_decay_fraction(1.0, 0, 10, 1.2); }),
              "wsd schedule: decay fraction must be in [0, 1], got 1.200000");
}

TEST(LrScheduleNames, ParseTheFourSchedulesAndTheTwoShapesCaseInsensitively) {
    EXPECT_EQ(parse_lr_schedule_kind("constant"), LrScheduleKind::Constant);
    EXPECT_EQ(parse_lr_schedule_kind("cosine"), LrScheduleKind::Cosine);
    EXPECT_EQ(parse_lr_schedule_kind("linear"), LrScheduleKind::Linear);
    EXPECT_EQ(parse_lr_schedule_kind("WSD"), LrScheduleKind::Wsd);
    for (LrScheduleKind k : {LrScheduleKind::Constant, LrScheduleKind::Cosine, LrScheduleKind::Linear, LrScheduleKind::Wsd})
        EXPECT_EQ(parse_lr_schedule_kind(lr_schedule_kind_name(k)), k);
    EXPECT_EQ(user_error_text([] { parse_lr_schedule_kind("step"); }),
              "learning-rate schedule: expected constant, cosine, linear or wsd, got 'step'");
    EXPECT_EQ(user_error_text([] { parse_lr_schedule_kind(""); }),
              "learning-rate schedule: expected constant, cosine, linear or wsd, got ''");
    EXPECT_EQ(parse_decay_shape("Cosine"), DecayShape::Cosine);
    EXPECT_EQ(parse_decay_shape(decay_shape_name(DecayShape::Linear)), DecayShape::Linear);
    EXPECT_EQ(user_error_text([] { parse_decay_shape("exp"); }), "decay shape: expected linear or cosine, got 'exp'");
    EXPECT_EQ(parse_qat_schedule_layout("FUSED"), QatScheduleLayout::Fused);
    EXPECT_EQ(parse_qat_schedule_layout(qat_schedule_layout_name(QatScheduleLayout::Classic)), QatScheduleLayout::Classic);
    EXPECT_EQ(user_error_text([] { parse_qat_schedule_layout("both"); }),
              "QAT schedule layout: expected fused or classic, got 'both'");
}

TEST(LrScheduleSpec, DispatchesByKindAndKeepsTheOldSchedulesValues) {
    LrScheduleSpec spec;
    spec.peak = 1.0;
    spec.warmup_steps = 10;
    spec.total_steps = 110;
    spec.final_fraction = 0.1;
    spec.kind = LrScheduleKind::Cosine;
    spec.validate();
    EXPECT_DOUBLE_EQ(spec.at(60), 0.55);  // as LrSchedule: half way, 0.1 + 0.9 * 0.5
    spec.kind = LrScheduleKind::Linear;
    EXPECT_DOUBLE_EQ(spec.at(35), 0.1 + 0.9 * 0.75);
    spec.kind = LrScheduleKind::Constant;
    EXPECT_DOUBLE_EQ(spec.at(100), 1.0);
    EXPECT_DOUBLE_EQ(spec.at(0), 0.1);
    spec.kind = LrScheduleKind::Wsd;
    spec.decay_steps = 50;
    spec.validate();
    EXPECT_DOUBLE_EQ(spec.at(59), 1.0);
    EXPECT_DOUBLE_EQ(spec.at(109), 0.1);
    spec.decay_steps = 101;
    EXPECT_EQ(user_error_text([&] { spec.validate(); }),
              "wsd schedule: decay steps must be in [0, total steps - warm-up steps = 100], got 101");
    spec.kind = LrScheduleKind::Cosine;
    spec.warmup_steps = 200;
    EXPECT_EQ(user_error_text([&] { spec.validate(); }),
              "cosine schedule: warm-up steps must be in [0, total steps = 110], got 200");
}

QatLrScheduleConfig qat_config(QatScheduleLayout layout) {
    QatLrScheduleConfig c;
    c.layout = layout;
    c.total_steps = 1000;
    c.qat_fraction = 0.28;
    c.peak = 1e-3;
    c.warmup_steps = 50;
    return c;
}

TEST(QatLrSchedule, FusedStartsQatWhereTheDecayStartsWithoutAWarmup) {
    const QatLrSchedule s(qat_config(QatScheduleLayout::Fused));
    EXPECT_EQ(s.qat_start_step(), 720);  // 1000 - round(0.28 * 1000)
    EXPECT_EQ(s.qat_steps(), 280);
    EXPECT_FALSE(s.is_qat(719));
    EXPECT_TRUE(s.is_qat(720));
    EXPECT_DOUBLE_EQ(s.at(0), 1e-3 / 50);
    EXPECT_DOUBLE_EQ(s.at(49), 1e-3);
    EXPECT_DOUBLE_EQ(s.at(719), 1e-3);                            // FP phase never decays
    EXPECT_DOUBLE_EQ(s.at(720), 1e-3 * (1.0 - 1.0 / 280.0));      // first QAT step: first decay step
    EXPECT_DOUBLE_EQ(s.at(999), 0.0);                             // linear to zero by default
    // Continuity: the LR never rises after the warm-up, and the step at the switch is one decay step.
    for (int64_t i = 50; i < 1000; ++i) EXPECT_LE(s.at(i), s.at(i - 1)) << i;
    EXPECT_NEAR(s.at(719) - s.at(720), 1e-3 / 280.0, 1e-15);
}

TEST(QatLrSchedule, ClassicDecaysTheFpRunThenWarmsUpAgainForQat) {
    QatLrScheduleConfig c = qat_config(QatScheduleLayout::Classic);
    c.classic_fp_decay_fraction = 0.2;  // 144 of the 720 FP steps
    c.classic_qat_warmup_steps = 20;
    c.classic_qat_peak = 5e-4;
    const QatLrSchedule s(c);
    EXPECT_EQ(s.qat_start_step(), 720);  // same split as fused
    EXPECT_DOUBLE_EQ(s.at(49), 1e-3);
    EXPECT_DOUBLE_EQ(s.at(575), 1e-3);                          // last FP plateau step (720 - 144 - 1)
    EXPECT_DOUBLE_EQ(s.at(576), 1e-3 * (1.0 - 1.0 / 144.0));   // FP cooldown starts
    EXPECT_DOUBLE_EQ(s.at(719), 0.0);                           // FP run ends decayed
    EXPECT_DOUBLE_EQ(s.at(720), 5e-4 / 20.0);                   // new warm-up at the QAT start
    EXPECT_DOUBLE_EQ(s.at(739), 5e-4);                          // QAT peak
    EXPECT_DOUBLE_EQ(s.at(740), 5e-4 * (1.0 - 1.0 / 260.0));   // QAT decay over the remaining 260 steps
    EXPECT_DOUBLE_EQ(s.at(999), 0.0);
    c.classic_qat_peak = 0.0;  // 0 = the FP peak
    EXPECT_DOUBLE_EQ(QatLrSchedule(c).at(739), 1e-3);
}

TEST(QatLrSchedule, ZeroAndFullQatFractions) {
    QatLrScheduleConfig c = qat_config(QatScheduleLayout::Fused);
    c.qat_fraction = 0.0;
    const QatLrSchedule none(c);
    EXPECT_EQ(none.qat_start_step(), 1000);
    EXPECT_FALSE(none.is_qat(999));
    EXPECT_DOUBLE_EQ(none.at(999), 1e-3);  // no QAT phase: no decay in the fused layout
    c.layout = QatScheduleLayout::Classic;
    EXPECT_DOUBLE_EQ(QatLrSchedule(c).at(999), 0.0);  // classic: the FP run's own decay
    c.qat_fraction = 1.0;
    c.warmup_steps = 0;
    c.classic_qat_warmup_steps = 10;
    const QatLrSchedule all(c);
    EXPECT_EQ(all.qat_start_step(), 0);
    EXPECT_TRUE(all.is_qat(0));
    EXPECT_DOUBLE_EQ(all.at(0), 1e-4);
    EXPECT_DOUBLE_EQ(all.at(999), 0.0);
}

TEST(QatLrSchedule, BadInputsNameTheField) {
    QatLrScheduleConfig c = qat_config(QatScheduleLayout::Fused);
    c.qat_fraction = 0.96;  // QAT would start at step 40, inside the 50-step warm-up
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }),
              "QAT schedule (fused): the warm-up (50 steps) must end before QAT starts at step 40; lower the "
              "warm-up or the QAT fraction");
    c.qat_fraction = -0.1;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }), "QAT schedule: QAT fraction must be in [0, 1], got -0.100000");
    c.qat_fraction = NAN;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }), "QAT schedule: QAT fraction must be in [0, 1], got nan");
    c.qat_fraction = 0.1;
    c.total_steps = 0;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }), "QAT schedule: total steps must be at least 1, got 0");
    c = qat_config(QatScheduleLayout::Classic);
    c.classic_qat_warmup_steps = 281;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }),
              "QAT schedule (classic): QAT warm-up steps must be in [0, QAT steps = 280], got 281");
    c.classic_qat_warmup_steps = 0;
    c.classic_fp_decay_fraction = 2.0;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }),
              "QAT schedule (classic): FP decay fraction must be in [0, 1], got 2.000000");
    c.classic_fp_decay_fraction = 0.2;
    c.peak = -1.0;
    EXPECT_EQ(user_error_text([&] { QatLrSchedule s(c); }),
              "wsd schedule: peak learning rate must be a positive finite number, got -1.000000");
}

}  // namespace
}  // namespace ql
