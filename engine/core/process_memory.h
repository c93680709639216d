// SPDX-License-Identifier: GPL-3.0-or-later
// This process's memory and what the machine has free: the live memory lane beside a job's
// progress and the "free" side of the pre-flight estimate (engine/estimate/job_estimate.h).
// Linux /proc; elsewhere zeros (nothing is refused on a guess). Plain C++ (facade-safe).
#pragma once

#include <cstdint>

namespace ql {

struct ProcessMemory {
    uint64_t rss_bytes = 0;       // resident now (VmRSS: anonymous and file-backed pages, mapped weights included)
    uint64_t peak_rss_bytes = 0;  // the most resident since start or the last reset (VmHWM)
};

ProcessMemory process_memory();

// Resets peak_rss_bytes to the current RSS (/proc/self/clear_refs "5"), so that one job's peak
// can be measured in a process that did other work before. False where the kernel refuses.
bool reset_peak_rss();

// Gives the C heap's free pages back to the system (glibc's malloc_trim). A job that frees large
// temporaries between its phases (a layer-by-layer PTQ: one block's forward, its samples, GPTQ's
// solve) otherwise keeps them resident in the heap, and the next phase's allocations land
// beside them: measured on a 48 MB BF16 decoder's GPTQ, the peak went from 330 MB above the
// start to 248 MB with a trim after each phase. A no-op where the C library has no such call.
void return_free_heap();

// Memory a new allocation can take without swapping or an OOM kill: MemAvailable from
// /proc/meminfo, lowered to what the cgroup (v2 memory.max - memory.current) still allows;
// QUANTLAB_MEMORY_LIMIT_BYTES overrides both (tests, machines whose real limit is elsewhere).
// 0 when unknown.
uint64_t available_memory_bytes();

}  // namespace ql
