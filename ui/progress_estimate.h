// SPDX-License-Identifier: GPL-3.0-or-later
// Progress of the current job phase as a person reads it: fraction, rate and time left. Plain
// C++ (no Qt) so the arithmetic is testable on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ql {

class ProgressEstimate {
public:
    // A report from the job: `done` of `total` units (total 0 = unknown) of `phase`, at time
    // `now_s` (any monotonic clock, seconds). A new phase restarts the rate measurement.
    void update(int64_t done, int64_t total, const std::string& phase, double now_s);
    void reset();

    const std::string& phase() const { return phase_; }
    int64_t done() const { return done_; }
    int64_t total() const { return total_; }
    // 0..1, or nothing when the total is unknown.
    std::optional<double> fraction() const;
    // Units per second over the phase so far (smoothed); nothing before two reports.
    std::optional<double> rate() const { return rate_; }
    // Seconds left in this phase at the current rate; nothing when unknown.
    std::optional<double> eta_s() const;

private:
    std::string phase_;
    int64_t done_ = 0, total_ = 0;
    int64_t last_done_ = 0;
    double last_time_ = 0;
    bool has_last_ = false;
    std::optional<double> rate_;
};

// "2 h 05 min", "3 min 12 s", "42 s": how long, for a status line.
std::string format_duration(double seconds);

}  // namespace ql
