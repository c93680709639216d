// SPDX-License-Identifier: GPL-3.0-or-later
// Process-wide engine setup and facts for status bars and reports. Plain shared header (engine/core).
#pragma once

#include <string>

namespace ql {

struct RuntimeInfo {
    int threads = 1;             // intra-op threads (LibTorch and our kernels)
    std::string blas;            // the BLAS library libblas.so.3 resolves to
    bool reference_blas = false; // true when it is the slow reference BLAS
    std::string torch_version;
    bool cuda_kernels = false;   // built with the CUDA kernels
    std::string quantlab_version;
};

// Sets the thread count to the hardware threads (Debian's LibTorch starts with 1) and checks
// the BLAS. Call once at startup; returns what it found. Safe to call again.
RuntimeInfo initialise_engine_runtime();

// Gives the calling thread (a GUI worker running engine jobs) the same intra-op thread count as
// the main thread: OpenMP's thread count is a per-thread setting, so a new std::thread would
// otherwise run with the library default.
void prepare_engine_worker_thread();

// The version string of this build (from CMake's project version).
std::string quantlab_version();

}  // namespace ql
