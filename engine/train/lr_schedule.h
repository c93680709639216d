// SPDX-License-Identifier: GPL-3.0-or-later
// Learning-rate schedules, per 0-based optimizer step:
//  - LrSchedule: linear warm-up, then constant, cosine or linear decay to final_fraction * peak at
//    total_steps (the demo trainer's schedule; unchanged).
//  - WsdSchedule: warmup-stable-decay (Hu et al., MiniCPM, arXiv 2404.06395; Hägele et al.,
//    arXiv 2405.18392): warm-up, a constant plateau at peak, then a decay phase of decay_steps
//    steps that ends exactly at final_fraction * peak on the last step. Its decay phase is where the
//    compute-optimal QAT paper fuses QAT with the cooldown (engine/train/qat_lr_schedule.h).
//  - LrScheduleSpec: one of the four by name ("constant", "cosine", "linear", "wsd") for the CLI.
#pragma once

#include <cstdint>
#include <string>

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

// Shape of a WSD decay phase. QAT.md: the paper's decay shape was not confirmed, so both are
// offered; linear is the default.
enum class DecayShape { Linear, Cosine };

// Warmup-stable-decay. With W = warmup_steps, T = total_steps, K = decay_steps, d0 = T - K (the
// first decay step), p = peak, r = final_fraction, for the 0-based step s:
//   s < W            : p * (s + 1) / W                       (first step p / W, step W-1 exactly p)
//   W <= s < d0      : p                                      (stable)
//   d0 <= s < T      : p * (r + (1 - r) * g(t)), t = (s - d0 + 1) / K in (0, 1],
//                      g(t) = 1 - t (linear) or (1 + cos(pi t)) / 2 (cosine)
//                      (first decay step already below p; the last step s = T-1 is exactly r * p)
//   s >= T           : r * p                                  (held at the floor)
//   (K = 0: no decay, p after the warm-up.) Requires p > 0 finite, 0 <= r <= 1, T >= 1, W >= 0,
//   K >= 0 and W + K <= T (the decay never overlaps the warm-up); validate() throws UserError.
struct WsdSchedule {
    double peak = 1e-3;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;
    int64_t decay_steps = 0;
    DecayShape shape = DecayShape::Linear;
    double final_fraction = 0.0;

    // decay_steps = round(decay_fraction * total_steps); decay_fraction in [0, 1] (UserError).
    static WsdSchedule with_decay_fraction(double peak, int64_t warmup_steps, int64_t total_steps,
                                           double decay_fraction, DecayShape shape = DecayShape::Linear,
                                           double final_fraction = 0.0);

    int64_t decay_start() const { return total_steps - decay_steps; }
    void validate() const;           // UserError naming the field
    double at(int64_t step) const;   // step >= 0; call validate() first (at() does not re-check)
};

// A schedule picked by name on the command line. "constant", "cosine" and "linear" map to
// LrSchedule (decay over total_steps - warmup_steps, reaching the floor at total_steps); "wsd" to
// WsdSchedule with decay_steps and decay_shape.
enum class LrScheduleKind { Constant, Cosine, Linear, Wsd };

// Case-insensitive; UserError listing the accepted names otherwise.
LrScheduleKind parse_lr_schedule_kind(const std::string& name);
const char* lr_schedule_kind_name(LrScheduleKind kind);  // "constant", "cosine", "linear", "wsd"
DecayShape parse_decay_shape(const std::string& name);   // "linear" or "cosine", case-insensitive
const char* decay_shape_name(DecayShape shape);

struct LrScheduleSpec {
    LrScheduleKind kind = LrScheduleKind::Cosine;
    double peak = 1e-3;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;
    double final_fraction = 0.1;
    int64_t decay_steps = 0;                    // wsd only
    DecayShape decay_shape = DecayShape::Linear;  // wsd only

    void validate() const;          // UserError naming the field
    double at(int64_t step) const;  // call validate() first
};

}  // namespace ql
