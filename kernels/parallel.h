// SPDX-License-Identifier: GPL-3.0-or-later
// Splits index ranges over the OpenMP thread pool (the same pool LibTorch's CPU backend uses,
// so at::set_num_threads also sizes ours). Small ranges run on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ql::kernels {

inline int worker_threads() {
#if defined(_OPENMP)
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

// Calls body(t, begin, end) for t < threads, one thread each, on contiguous chunks covering
// [0, n) whose sizes are multiples of `align` (a chunk past the end is skipped).
template <class Body>
void parallel_chunks(int threads, int64_t n, int64_t align, const Body& body) {
    int64_t chunk = (n + threads - 1) / threads;
    chunk = (chunk + align - 1) / align * align;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
    for (int t = 0; t < threads; ++t) {
        const int64_t b = std::min<int64_t>(n, t * chunk);
        const int64_t e = std::min<int64_t>(n, b + chunk);
        if (b < e) body(t, b, e);
    }
}

// Calls body(begin, end) on disjoint sub-ranges covering [0, n). `grain` is the smallest range
// worth a thread of its own; each thread gets one contiguous range (best for streaming memory).
// `align` keeps range boundaries on multiples of it (e.g. whole blocks).
template <class Body>
void parallel_ranges(int64_t n, int64_t grain, int64_t align, const Body& body) {
    if (n <= 0) return;
    const int threads = static_cast<int>(std::min<int64_t>(worker_threads(), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1))));
    if (threads <= 1) {
        body(int64_t{0}, n);
        return;
    }
    parallel_chunks(threads, n, align, [&](int, int64_t b, int64_t e) { body(b, e); });
}

}  // namespace ql::kernels
