// SPDX-License-Identifier: GPL-3.0-or-later
// Learning-rate schedules: linear warm-up, then constant, cosine or linear decay to
// final_fraction * peak at total_steps (the QAT planner's warmup-stable-decay builds on these).
#pragma once

#include <cstdint>

namespace ql {

struct LrSchedule {
    enum class Decay { Constant, Cosine, Linear };
    double peak = 1e-3;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;
    Decay decay = Decay::Cosine;
    double final_fraction = 0.1;

    // Rate for the 0-based step: (step + 1) / warmup * peak during warm-up, then the decay.
    double at(int64_t step) const;
};

}  // namespace ql
