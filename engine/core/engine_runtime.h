// SPDX-License-Identifier: GPL-3.0-or-later
// Process-wide engine setup and facts for status bars and reports. Plain shared header (engine/core).
#pragma once

#include <string>

namespace ql {

struct RuntimeInfo {
    int threads = 1;             // intra-op threads (LibTorch and our kernels)
    std::string blas;            // the BLAS library libblas.so.3 resolves to
    std::string blas_config;     // OpenBLAS's openblas_get_config() ("OpenBLAS 0.3.21 ... Zen ..."), or ""
    bool reference_blas = false; // true when it is the slow reference BLAS
    std::string blas_threads;    // how OpenBLAS runs in parallel: "openmp" (LibTorch's libgomp pool),
                                 // "pthreads" (a pool of its own), "sequential", or "" (not OpenBLAS)
    bool malloc_tuned = false;   // the allocator keeps large freed blocks for reuse (see below)
    std::string torch_version;
    bool cuda_kernels = false;   // built with the CUDA kernels
    std::string quantlab_version;
    std::string cpu_model;       // /proc/cpuinfo "model name" ("" when unknown)
    int hardware_threads = 0;    // std::thread::hardware_concurrency()
};

// Sets the thread count to the hardware threads (Debian's LibTorch starts with 1), checks the
// BLAS and tunes glibc's allocator: blocks up to 128 MiB come from the heap instead of fresh
// mmap()s and up to 256 MiB of freed heap is kept. A forward allocates and frees the same large
// activations again and again; from fresh mappings each costs a page fault per 4 KiB (the real
// SmolLM2's 512-token forward: 39 k fewer faults, +0-31 % tokens/s in A/Bs; docs/BENCHMARKS.md).
// Left alone when the user set glibc's malloc tunables (GLIBC_TUNABLES glibc.malloc.*,
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_). Call once at startup, before the large
// allocations; returns what it found. Safe to call again.
RuntimeInfo initialise_engine_runtime();

// Gives the calling thread (a GUI worker running engine jobs) the same intra-op thread count as
// the main thread: OpenMP's thread count is a per-thread setting, so a new std::thread would
// otherwise run with the library default.
void prepare_engine_worker_thread();

// The version string of this build (from CMake's project version).
std::string quantlab_version();

// The git commit the source tree this build was configured from is at now: 40 hex digits, with
// "-dirty" when tracked files have uncommitted changes (`git describe --always --dirty`), or
// "unknown" where git or the tree is missing. A training record names it. Runs git: call it off
// the GUI thread.
std::string quantlab_source_commit();

}  // namespace ql
