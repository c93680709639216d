// SPDX-License-Identifier: GPL-3.0-or-later
// CPU clones of the hot kernel loops: the same portable C++ compiled for several x86-64
// micro-architecture levels in one binary, and picked at run time.
//
// run_cpu_clone(body) runs `body` (a lambda marked QL_CLONE_BODY) inside a function compiled for
// the active clone: x86-64-v4 (AVX-512 F/BW/CD/DQ/VL, 512-bit vectors), x86-64-v3 (AVX2, FMA,
// BMI, F16C) or the x86-64 baseline (SSE2). Everything the body calls is inlined into that
// function (QL_INLINE, QL_HD), so GCC vectorises the loops for that level. No clone contains
// hand-written SIMD: all of them compute what the portable code says, and because the kernels are
// built with -ffp-contract=off and without -ffast-math the vectoriser may not change a single
// rounding. That is what lets the x86-64-v4 clone be bit-identical to the scalar references on
// machines this code was never run on; tests/kernels/cpu_clone_test.cpp runs every clone the
// test machine supports against the references.
//
// The active clone is the best one the CPU and OS support, unless QUANTLAB_CPU_CLONE names
// another (read once, at the first kernel call) or set_cpu_clone() chose one (tests, benchmarks).
//
// QL_CPU_CLONES (GCC target_clones, v3 + baseline, resolved by the loader) is the older way, kept
// for the GGUF codecs and the engine's statistics loops; its clones cannot be chosen or tested
// one by one.
#pragma once

#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define QL_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define QL_X86_CLONES 1
#else
#define QL_CPU_CLONES
#define QL_X86_CLONES 0
#endif

// Helpers called from a cloned function must be inlined into it to be compiled for the clone's
// target (a separate function is compiled once, for the baseline). QL_INLINE marks CPU-only
// helpers; the logic shared with the CUDA kernels is QL_HD (portable.h), which expands to the
// same on the host.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define QL_INLINE inline __attribute__((always_inline))
#define QL_CLONE_BODY __attribute__((always_inline))
#else
#define QL_INLINE inline
#define QL_CLONE_BODY
#endif

namespace ql::kernels {

enum class CpuClone : int { Baseline = 0, X86_64_V3 = 1, X86_64_V4 = 2 };

// Every clone this build has, baseline first.
std::vector<CpuClone> cpu_clones();

// "x86-64-v4", "x86-64-v3", "x86-64" (or "portable" where there are no x86 clones).
const char* cpu_clone_name(CpuClone clone);

// Whether this CPU and OS can run the clone (the baseline always).
bool cpu_clone_supported(CpuClone clone);

// The clone kernels run now.
CpuClone active_cpu_clone();

// Makes every kernel call from now on run `clone`; false (and nothing changes) when this CPU
// cannot run it. Not meant to be called while kernels run on other threads.
bool set_cpu_clone(CpuClone clone);

// The best supported clone, or the one QUANTLAB_CPU_CLONE names (when supported).
CpuClone default_cpu_clone();

// The processor's brand string (CPUID leaves 0x80000002-4), e.g. "AMD EPYC 7B13"; "unknown"
// where there is none.
std::string cpu_model_name();

namespace detail {

// One instantiation per body and clone; noinline so that each is a function compiled for its
// target, into which the body is inlined.
template <class Body>
__attribute__((noinline)) void run_baseline(const Body& body) {
    body();
}
#if QL_X86_CLONES
template <class Body>
__attribute__((noinline, target("arch=x86-64-v3"))) void run_x86_64_v3(const Body& body) {
    body();
}
template <class Body>
__attribute__((noinline, target("arch=x86-64-v4"))) void run_x86_64_v4(const Body& body) {
    body();
}
#endif

}  // namespace detail

// Runs body() compiled for the active clone. body: a lambda marked QL_CLONE_BODY that calls
// QL_INLINE / QL_HD code, e.g.
//   run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_blocks(x, y, n, g); });
// Pass loop bounds and pointers as arguments of an inline function (as above) rather than using
// captured references inside the loop: a byte store could alias the closure, and the loop would
// reload them on every element.
template <class Body>
void run_cpu_clone(const Body& body) {
#if QL_X86_CLONES
    switch (active_cpu_clone()) {
        case CpuClone::X86_64_V4: detail::run_x86_64_v4(body); return;
        case CpuClone::X86_64_V3: detail::run_x86_64_v3(body); return;
        case CpuClone::Baseline: break;
    }
#endif
    detail::run_baseline(body);
}

}  // namespace ql::kernels
