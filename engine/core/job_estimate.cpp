// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/job_estimate.h"

#include <cmath>
#include <cstdio>

#include "engine/core/errors.h"

namespace ql {

std::string memory_text(double bytes) {
    char buf[32];
    if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
    else if (bytes >= 1e6) std::snprintf(buf, sizeof buf, "%.3g MB", bytes / 1e6);
    else std::snprintf(buf, sizeof buf, "%.3g kB", bytes / 1e3);
    return buf;
}

std::string duration_text(double seconds) {
    char buf[32];
    if (!std::isfinite(seconds)) return "?";
    if (seconds < 90) std::snprintf(buf, sizeof buf, "%.0f s", seconds);
    else if (seconds < 5400) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
    else std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
    return buf;
}

std::string job_estimate_text(const JobEstimate& e) {
    std::string t = e.job + ": peak " + memory_text(e.peak_bytes) + " (now " + memory_text(e.current_bytes) +
                    (e.available_bytes > 0 ? ", free " + memory_text(e.available_bytes) : std::string()) + "), time " +
                    duration_text(e.seconds);
    if (e.gflops > 0) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " (%.3g TFLOP at %.0f GFLOP/s measured)", e.work_flops / 1e12, e.gflops);
        t += buf;
    }
    t += "\n";
    for (const JobEstimate::Part& p : e.parts) t += "  " + memory_text(p.bytes) + "  " + p.what + "\n";
    if (!e.fits()) t += "does not fit: " + (e.advice.empty() ? std::string("a machine with more memory") : e.advice) + "\n";
    return t;
}

void require_job_fits(const JobEstimate& e) {
    if (e.fits()) return;
    std::string largest;
    for (size_t i = 0; i < e.parts.size() && i < 3; ++i)
        largest += (i ? ", " : "") + e.parts[i].what + " " + memory_text(e.parts[i].bytes);
    throw UserError(e.job + ": needs " + memory_text(e.needed_bytes()) + " more memory at its peak (" + largest +
                    "), this machine has " + memory_text(e.available_bytes) + " free" +
                    (e.advice.empty() ? std::string() : "; " + e.advice) + " (--dry-run shows the estimate)");
}

}  // namespace ql
