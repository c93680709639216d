// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace ql {

double LrSchedule::at(int64_t step) const {
    if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    if (decay == Decay::Constant) return peak;
    const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
    const double t = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(span), 0.0, 1.0);
    const double shape = decay == Decay::Cosine ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
    return peak * (final_fraction + (1.0 - final_fraction) * shape);
}

}  // namespace ql
