// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/lr_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "engine/core/errors.h"

namespace ql {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

void check_common(const char* what, double peak, int64_t warmup_steps, int64_t total_steps, double final_fraction) {
    const std::string w = what;
    if (!std::isfinite(peak) || peak <= 0.0)
        throw UserError(w + ": peak learning rate must be a positive finite number, got " + std::to_string(peak));
    if (total_steps < 1)
        throw UserError(w + ": total steps must be at least 1, got " + std::to_string(total_steps));
    if (warmup_steps < 0 || warmup_steps > total_steps)
        throw UserError(w + ": warm-up steps must be in [0, total steps = " + std::to_string(total_steps) + "], got " +
                        std::to_string(warmup_steps));
    if (!(final_fraction >= 0.0 && final_fraction <= 1.0))
        throw UserError(w + ": final fraction must be in [0, 1], got " + std::to_string(final_fraction));
}

}  // namespace

double LrSchedule::at(int64_t step) const {
    if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    if (decay == Decay::Constant) return peak;
    const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
    const double t = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(span), 0.0, 1.0);
    const double shape = decay == Decay::Cosine ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
    return peak * (final_fraction + (1.0 - final_fraction) * shape);
}

WsdSchedule WsdSchedule::with_decay_fraction(double peak, int64_t warmup_steps, int64_t total_steps,
                                             double decay_fraction, DecayShape shape, double final_fraction) {
    if (!(decay_fraction >= 0.0 && decay_fraction <= 1.0))
        throw UserError("wsd schedule: decay fraction must be in [0, 1], got " + std::to_string(decay_fraction));
    WsdSchedule s;
    s.peak = peak;
    s.warmup_steps = warmup_steps;
    s.total_steps = total_steps;
    s.decay_steps = std::llround(decay_fraction * static_cast<double>(std::max<int64_t>(total_steps, 0)));
    s.shape = shape;
    s.final_fraction = final_fraction;
    return s;
}

void WsdSchedule::validate() const {
    check_common("wsd schedule", peak, warmup_steps, total_steps, final_fraction);
    if (decay_steps < 0 || warmup_steps + decay_steps > total_steps)
        throw UserError("wsd schedule: decay steps must be in [0, total steps - warm-up steps = " +
                        std::to_string(total_steps - warmup_steps) + "], got " + std::to_string(decay_steps));
}

double WsdSchedule::at(int64_t step) const {
    if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    const int64_t d0 = decay_start();
    if (step < d0) return peak;
    if (step >= total_steps) return peak * final_fraction;
    const double t = static_cast<double>(step - d0 + 1) / static_cast<double>(decay_steps);
    const double g = shape == DecayShape::Cosine ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
    return peak * (final_fraction + (1.0 - final_fraction) * g);
}

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
    const std::string n = lower(name);
    if (n == "constant") return LrScheduleKind::Constant;
    if (n == "cosine") return LrScheduleKind::Cosine;
    if (n == "linear") return LrScheduleKind::Linear;
    if (n == "wsd") return LrScheduleKind::Wsd;
    throw UserError("learning-rate schedule: expected constant, cosine, linear or wsd, got '" + name + "'");
}

const char* lr_schedule_kind_name(LrScheduleKind kind) {
    switch (kind) {
        case LrScheduleKind::Constant: return "constant";
        case LrScheduleKind::Cosine: return "cosine";
        case LrScheduleKind::Linear: return "linear";
        case LrScheduleKind::Wsd: return "wsd";
    }
    return "?";
}

DecayShape parse_decay_shape(const std::string& name) {
    const std::string n = lower(name);
    if (n == "linear") return DecayShape::Linear;
    if (n == "cosine") return DecayShape::Cosine;
    throw UserError("decay shape: expected linear or cosine, got '" + name + "'");
}

const char* decay_shape_name(DecayShape shape) { return shape == DecayShape::Cosine ? "cosine" : "linear"; }

void LrScheduleSpec::validate() const {
    if (kind == LrScheduleKind::Wsd) {
        WsdSchedule{peak, warmup_steps, total_steps, decay_steps, decay_shape, final_fraction}.validate();
        return;
    }
    check_common((std::string(lr_schedule_kind_name(kind)) + " schedule").c_str(), peak, warmup_steps, total_steps,
                 final_fraction);
}

double LrScheduleSpec::at(int64_t step) const {
    switch (kind) {
        case LrScheduleKind::Wsd:
            return WsdSchedule{peak, warmup_steps, total_steps, decay_steps, decay_shape, final_fraction}.at(step);
        case LrScheduleKind::Constant:
            return LrSchedule{peak, warmup_steps, total_steps, LrSchedule::Decay::Constant, final_fraction}.at(step);
        case LrScheduleKind::Cosine:
            return LrSchedule{peak, warmup_steps, total_steps, LrSchedule::Decay::Cosine, final_fraction}.at(step);
        case LrScheduleKind::Linear:
            return LrSchedule{peak, warmup_steps, total_steps, LrSchedule::Decay::Linear, final_fraction}.at(step);
    }
    return peak;
}

}  // namespace ql
