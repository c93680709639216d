// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/qat_lr_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "engine/core/errors.h"

namespace ql {

QatScheduleLayout parse_qat_schedule_layout(const std::string& name) {
    std::string n = name;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n == "fused") return QatScheduleLayout::Fused;
    if (n == "classic") return QatScheduleLayout::Classic;
    throw UserError("QAT schedule layout: expected fused or classic, got '" + name + "'");
}

const char* qat_schedule_layout_name(QatScheduleLayout layout) {
    return layout == QatScheduleLayout::Fused ? "fused" : "classic";
}

QatLrSchedule::QatLrSchedule(const QatLrScheduleConfig& config) : config_(config) {
    const QatLrScheduleConfig& c = config_;
    if (c.total_steps < 1)
        throw UserError("QAT schedule: total steps must be at least 1, got " + std::to_string(c.total_steps));
    if (!(c.qat_fraction >= 0.0 && c.qat_fraction <= 1.0))
        throw UserError("QAT schedule: QAT fraction must be in [0, 1], got " + std::to_string(c.qat_fraction));
    const int64_t q = std::llround(c.qat_fraction * static_cast<double>(c.total_steps));
    qat_start_ = c.total_steps - q;
    if (c.layout == QatScheduleLayout::Fused) {
        if (c.warmup_steps > qat_start_)
            throw UserError("QAT schedule (fused): the warm-up (" + std::to_string(c.warmup_steps) +
                            " steps) must end before QAT starts at step " + std::to_string(qat_start_) +
                            "; lower the warm-up or the QAT fraction");
        fp_ = WsdSchedule{c.peak, c.warmup_steps, c.total_steps, q, c.shape, c.final_fraction};
        fp_.validate();
        return;
    }
    if (!(c.classic_fp_decay_fraction >= 0.0 && c.classic_fp_decay_fraction <= 1.0))
        throw UserError("QAT schedule (classic): FP decay fraction must be in [0, 1], got " +
                        std::to_string(c.classic_fp_decay_fraction));
    if (!std::isfinite(c.classic_qat_peak) || c.classic_qat_peak < 0.0)
        throw UserError("QAT schedule (classic): QAT peak learning rate must be >= 0 (0 = the FP peak), got " +
                        std::to_string(c.classic_qat_peak));
    if (c.classic_qat_warmup_steps < 0 || c.classic_qat_warmup_steps > q)
        throw UserError("QAT schedule (classic): QAT warm-up steps must be in [0, QAT steps = " + std::to_string(q) +
                        "], got " + std::to_string(c.classic_qat_warmup_steps));
    if (qat_start_ > 0) {
        if (c.warmup_steps > qat_start_)
            throw UserError("QAT schedule (classic): the FP warm-up (" + std::to_string(c.warmup_steps) +
                            " steps) is longer than the FP phase (" + std::to_string(qat_start_) + " steps)");
        const int64_t fp_decay = std::min<int64_t>(
            qat_start_ - c.warmup_steps,
            std::llround(c.classic_fp_decay_fraction * static_cast<double>(qat_start_)));
        fp_ = WsdSchedule{c.peak, c.warmup_steps, qat_start_, fp_decay, c.shape, c.final_fraction};
        fp_.validate();
    }
    if (q > 0) {
        const double qat_peak = c.classic_qat_peak > 0.0 ? c.classic_qat_peak : c.peak;
        qat_ = WsdSchedule{qat_peak, c.classic_qat_warmup_steps, q, q - c.classic_qat_warmup_steps, c.shape,
                           c.final_fraction};
        qat_.validate();
    }
}

double QatLrSchedule::at(int64_t step) const {
    if (config_.layout == QatScheduleLayout::Fused || step < qat_start_) return fp_.at(step);
    if (qat_steps() == 0) return fp_.at(step);
    return qat_.at(step - qat_start_);
}

}  // namespace ql
