// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/progress_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ql {

void ProgressEstimate::reset() { *this = ProgressEstimate(); }

void ProgressEstimate::update(int64_t done, int64_t total, const std::string& phase, double now_s) {
    if (phase != phase_ || done < last_done_) {
        phase_ = phase;
        rate_.reset();
        has_last_ = false;
    }
    done_ = done;
    total_ = total;
    if (!has_last_) {
        last_done_ = done;
        last_time_ = now_s;
        has_last_ = true;
        return;
    }
    const double dt = now_s - last_time_;
    // Reports come every batch; measuring over at least a quarter second keeps the rate from
    // jumping with every tiny interval.
    if (dt < 0.25 || done <= last_done_) return;
    const double instant = static_cast<double>(done - last_done_) / dt;
    // An exponential average over the last few seconds follows a changing speed (evaluation
    // batches vs training steps) without the noise of single intervals.
    rate_ = rate_ ? 0.7 * *rate_ + 0.3 * instant : instant;
    last_done_ = done;
    last_time_ = now_s;
}

std::optional<double> ProgressEstimate::fraction() const {
    if (total_ <= 0) return std::nullopt;
    return std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
}

std::optional<double> ProgressEstimate::eta_s() const {
    if (total_ <= 0 || !rate_ || *rate_ <= 0) return std::nullopt;
    return static_cast<double>(std::max<int64_t>(0, total_ - done_)) / *rate_;
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "—";
    const auto s = static_cast<long long>(std::llround(seconds));
    char buf[64];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%lld h %02lld min", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        std::snprintf(buf, sizeof buf, "%lld min %02lld s", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lld s", s);
    return buf;
}

}  // namespace ql
