// SPDX-License-Identifier: GPL-3.0-or-later
// A job's pre-flight estimate: the peak memory and the time it will take on this machine, worked
// out from the model's shapes, the recipe, the data and a short measurement of this machine
// before anything large is allocated, so that a job that cannot fit is refused with the numbers
// and the setting that lowers them instead of being killed by the kernel half-way. Shown by the
// GUI's recipe panel and `quantlab-cli ... --dry-run`. Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

struct JobEstimate {
    struct Part {
        std::string what;   // "activations between blocks (128 x 2048 x 2048, bf16)"
        double bytes = 0;
    };
    std::string job;                // "ptq", "eval", "generate", "train", "stats"
    double peak_bytes = 0;          // this process's resident memory at the job's peak
    double current_bytes = 0;       // resident now, before the job
    double available_bytes = 0;     // what the machine can still give (0: unknown)
    std::vector<Part> parts;        // what the peak holds beyond `current_bytes`, largest first
    double seconds = 0;             // the expected time on this machine
    double work_flops = 0;          // the work it is estimated from
    double gflops = 0;              // this machine's measured float32 matrix-multiply rate
    std::string advice;             // the setting that lowers the peak most, "" when none

    double needed_bytes() const { return peak_bytes > current_bytes ? peak_bytes - current_bytes : 0; }
    // Unknown free memory refuses nothing.
    bool fits() const { return available_bytes <= 0 || needed_bytes() <= available_bytes; }
};

// The estimate in a few lines ("peak 3.1 GB (now 0.2 GB, free 18.9 GB) ...").
std::string job_estimate_text(const JobEstimate& e);

// UserError when the job will not fit: "<job>: needs N GB more memory at its peak (<largest
// parts>), this machine has M GB free; <advice>".
void require_job_fits(const JobEstimate& e);

// "2.47 GB", "512 MB" (decimal units, 3 significant digits).
std::string memory_text(double bytes);
// "41 s", "12 min", "3.2 h".
std::string duration_text(double seconds);

}  // namespace ql
