// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/adamw_update.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

QL_INLINE void update_range(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                            int64_t n, float decay, AdamWCoefficients c) {
    for (int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        const float pi = p[i] * decay;
        const float mi = m[i] * c.beta1 + c.one_minus_beta1 * gi;
        const float vi = v[i] * c.beta2 + (c.one_minus_beta2 * gi) * gi;
        const float denom = std::sqrt(vi) / c.bc2_sqrt + c.eps;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi + c.neg_step_size * (mi / denom);
    }
}

}  // namespace

void adamw_update(const AdamWSegment* segments, int64_t count, const AdamWCoefficients& c) {
    // Element offsets of the segments in one virtual flat buffer, so that each thread gets one
    // contiguous share of all the parameters' elements.
    std::vector<int64_t> start(static_cast<size_t>(count) + 1, 0);
    for (int64_t s = 0; s < count; ++s) start[s + 1] = start[s] + segments[s].n;
    const int64_t total = start[count];
    parallel_ranges(total, int64_t{1} << 15, 64, [&](int64_t b, int64_t e) {
        int64_t s = 0;
        while (s < count && start[s + 1] <= b) ++s;
        for (; s < count && start[s] < e; ++s) {
            const AdamWSegment& q = segments[s];
            const int64_t lo = std::max(b, start[s]) - start[s], hi = std::min(e, start[s + 1]) - start[s];
            if (lo >= hi) continue;
            run_cpu_clone([&]() QL_CLONE_BODY {
                update_range(q.p + lo, q.g + lo, q.m + lo, q.v + lo, hi - lo, q.decay_factor, c);
            });
        }
    });
}

}  // namespace ql::kernels
