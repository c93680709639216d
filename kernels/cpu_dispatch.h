// SPDX-License-Identifier: GPL-3.0-or-later
// Builds hot CPU loops twice (AVX2+FMA "x86-64-v3" and baseline x86-64) and picks one at load
// time, so one binary vectorises with 256-bit registers where the CPU has them and still runs
// everywhere. Kernels are compiled with -ffp-contract=off, so FMA is only ever used where the
// format's definition asks for it (fmaf).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define QL_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define QL_CPU_CLONES
#endif

// Helpers called from a QL_CPU_CLONES function must be inlined into it to be compiled for the
// clone's target (a separate function is compiled once, for the baseline). QL_INLINE marks
// CPU-only helpers; the logic shared with the CUDA kernels is QL_HD (portable.h), which
// expands to the same on the host.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define QL_INLINE inline __attribute__((always_inline))
#else
#define QL_INLINE inline
#endif
