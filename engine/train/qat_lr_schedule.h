// SPDX-License-Identifier: GPL-3.0-or-later
// The learning rate of an FP-then-QAT run, step by step, in the two layouts compared by Dremov et
// al., "Compute-Optimal Quantization-Aware Training" (arXiv 2509.22935; docs: shared/design/QAT.md):
//
//  Fused ("cooldown fusion"): one warmup-stable-decay schedule over the whole run whose decay phase
//    is exactly the QAT phase: QAT starts where the cooldown starts, with no new warm-up, so the LR
//    is continuous at the switch. The FP phase never decays (no redundant FP cooldown updates).
//  Classic: the FP phase is a complete run with its own WSD schedule (warm-up, plateau, decay over
//    classic_fp_decay_fraction of the FP steps), then QAT restarts with a new linear warm-up of
//    classic_qat_warmup_steps to classic_qat_peak and decays over the rest of the QAT phase.
//
// Formulas, with T = total_steps, f = qat_fraction, Q = round(f * T) QAT steps, q0 = T - Q the
// first QAT step (0-based), W = warmup_steps, p = peak, r = final_fraction, g the decay shape:
//   Fused:   lr(s) = WsdSchedule{p, W, T, decay_steps = Q, g, r}.at(s).
//            Requires W <= q0 (the warm-up ends before QAT starts).
//   Classic: s <  q0: WsdSchedule{p, W, q0, decay_steps = K_fp, g, r}.at(s),
//                     K_fp = min(q0 - W, round(classic_fp_decay_fraction * q0)); requires W <= q0
//            s >= q0: WsdSchedule{p_q, W_q, Q, decay_steps = Q - W_q, g, r}.at(s - q0),
//                     p_q = classic_qat_peak (0 means p), W_q = classic_qat_warmup_steps <= Q.
//   (WsdSchedule in engine/train/lr_schedule.h: warm-up (s+1)/W * p, plateau p, decay ending at r*p
//   on the phase's last step.) Q = 0 means no QAT: fused is then warm-up + constant p (no decay),
//   classic is the FP run alone. Steps >= T hold the final rate.
// The paper's decay shape is not confirmed (QAT.md); linear to zero is the default.
#pragma once

#include <cstdint>
#include <string>

#include "engine/train/lr_schedule.h"

namespace ql {

enum class QatScheduleLayout { Fused, Classic };

// "fused" or "classic", case-insensitive; UserError otherwise.
QatScheduleLayout parse_qat_schedule_layout(const std::string& name);
const char* qat_schedule_layout_name(QatScheduleLayout layout);

struct QatLrScheduleConfig {
    QatScheduleLayout layout = QatScheduleLayout::Fused;
    int64_t total_steps = 1;      // FP + QAT optimizer steps, >= 1
    double qat_fraction = 0.1;    // share of total_steps run with QAT, [0, 1]
    double peak = 1e-3;           // peak LR of the FP phase (and of the fused decay)
    int64_t warmup_steps = 0;     // warm-up at the start of the FP phase
    DecayShape shape = DecayShape::Linear;
    double final_fraction = 0.0;  // every decay ends at final_fraction * its peak
    // Classic layout only.
    double classic_fp_decay_fraction = 0.2;  // the FP run's own cooldown, share of FP steps, [0, 1]
    int64_t classic_qat_warmup_steps = 0;    // new warm-up at the QAT start, <= QAT steps
    double classic_qat_peak = 0.0;           // QAT peak LR; 0 = peak
};

class QatLrSchedule {
public:
    // Validates (UserError naming the field) and fixes the phase boundaries.
    explicit QatLrSchedule(const QatLrScheduleConfig& config);

    int64_t qat_start_step() const { return qat_start_; }   // q0; == total_steps when Q = 0
    int64_t qat_steps() const { return config_.total_steps - qat_start_; }
    bool is_qat(int64_t step) const { return step >= qat_start_; }
    double at(int64_t step) const;                          // step >= 0
    const QatLrScheduleConfig& config() const { return config_; }

private:
    QatLrScheduleConfig config_;
    int64_t qat_start_ = 0;
    WsdSchedule fp_, qat_;  // classic: the two phases; fused: fp_ is the whole run
};

}  // namespace ql
