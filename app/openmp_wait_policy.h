// SPDX-License-Identifier: GPL-3.0-or-later
// Both mains start with ensure_passive_openmp_wait(argv). libgomp reads OMP_WAIT_POLICY when it
// is loaded, before main(), so the only way to choose it from inside the program is to set it
// and re-execute. With the default (spinning) policy, idle OpenMP workers keep burning the cores
// that the GUI thread, a second QuantLab process or a CI job need: on a loaded 2-core machine the
// demo model's forward pass ran 10x slower. A policy the user set is left alone.
#pragma once

#include <cstdlib>
#include <unistd.h>

namespace ql {

inline void ensure_passive_openmp_wait(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run with the default policy
}

}  // namespace ql
