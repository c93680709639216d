// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/channel_reduce.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

// Running statistics of one channel, kept as integers (see magnitude_bits.h).
struct RangeAcc {
    uint32_t amax = 0;
    int32_t lo = 0;  // sortable key of 0.0f is 0
    int32_t hi = 0;

    void merge(const RangeAcc& o) {
        amax = std::max(amax, o.amax);
        lo = std::min(lo, o.lo);
        hi = std::max(hi, o.hi);
    }
};

QL_CPU_CLONES
uint32_t absmax_bits_span(const float* __restrict x, int64_t n) {
    uint32_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    return m;
}

QL_CPU_CLONES
void range_span(const float* __restrict x, int64_t n, int32_t* lo_io, int32_t* hi_io) {
    int32_t lo = *lo_io, hi = *hi_io;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t k = sortable_key(finite_or_zero(x[i]));
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    *lo_io = lo;
    *hi_io = hi;
}

// Per-element channel index pattern with inner == 1: contiguous rows of `channels` values.
QL_CPU_CLONES
void absmax_rows(const float* __restrict x, int64_t rows, int64_t channels, uint32_t* __restrict acc) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) {
            const uint32_t a = finite_magnitude_bits(x[r * channels + c]);
            acc[c] = a > acc[c] ? a : acc[c];
        }
}

QL_CPU_CLONES
void range_rows(const float* __restrict x, int64_t rows, int64_t channels, int32_t* __restrict lo,
                int32_t* __restrict hi) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) {
            const int32_t k = sortable_key(finite_or_zero(x[r * channels + c]));
            lo[c] = k < lo[c] ? k : lo[c];
            hi[c] = k > hi[c] ? k : hi[c];
        }
}

// Statistics for channels [c0, c1) over outer indices [o0, o1) into acc[c - c0].
void accumulate(const float* x, const ChannelLayout& L, int64_t o0, int64_t o1, int64_t c0, int64_t c1,
                bool want_range, RangeAcc* acc) {
    if (L.inner == 1 && c0 == 0 && c1 == L.channels) {
        std::vector<uint32_t> am(static_cast<size_t>(L.channels), 0);
        std::vector<int32_t> lo(static_cast<size_t>(L.channels), 0), hi(static_cast<size_t>(L.channels), 0);
        const float* base = x + o0 * L.channels;
        if (want_range)
            range_rows(base, o1 - o0, L.channels, lo.data(), hi.data());
        else
            absmax_rows(base, o1 - o0, L.channels, am.data());
        for (int64_t c = 0; c < L.channels; ++c) acc[c].merge(RangeAcc{am[c], lo[c], hi[c]});
        return;
    }
    for (int64_t o = o0; o < o1; ++o)
        for (int64_t c = c0; c < c1; ++c) {
            const float* row = x + (o * L.channels + c) * L.inner;
            RangeAcc r;
            if (want_range)
                range_span(row, L.inner, &r.lo, &r.hi);
            else
                r.amax = absmax_bits_span(row, L.inner);
            acc[c - c0].merge(r);
        }
}

// Splits the work over threads: along `outer` when it is large enough (each chunk keeps its
// own partial results, merged at the end), otherwise along channels.
std::vector<RangeAcc> channel_stats(const float* x, const ChannelLayout& L, bool want_range) {
    std::vector<RangeAcc> result(static_cast<size_t>(L.channels));
    const int64_t n = L.elements();
    if (n == 0) return result;
    const int threads = static_cast<int>(std::min<int64_t>(worker_threads(), std::max<int64_t>(1, n >> 16)));
    if (L.outer >= threads && threads > 1) {
        std::vector<std::vector<RangeAcc>> partial(static_cast<size_t>(threads),
                                                   std::vector<RangeAcc>(static_cast<size_t>(L.channels)));
        const int64_t chunk = (L.outer + threads - 1) / threads;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
        for (int t = 0; t < threads; ++t) {
            const int64_t o0 = std::min(L.outer, t * chunk), o1 = std::min(L.outer, o0 + chunk);
            if (o0 < o1) accumulate(x, L, o0, o1, 0, L.channels, want_range, partial[t].data());
        }
        for (auto& p : partial)
            for (int64_t c = 0; c < L.channels; ++c) result[c].merge(p[c]);
        return result;
    }
    parallel_ranges(L.channels, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, L.outer * L.inner)), 1,
                    [&](int64_t c0, int64_t c1) {
                        accumulate(x, L, 0, L.outer, c0, c1, want_range, result.data() + c0);
                    });
    return result;
}

}  // namespace

float finite_absmax(const float* x, int64_t n) {
    float r = 0.0f;
    channel_finite_absmax(x, ChannelLayout{1, 1, n}, &r);
    return r;
}

void finite_range(const float* x, int64_t n, float* min_out, float* max_out) {
    channel_finite_range(x, ChannelLayout{1, 1, n}, min_out, max_out);
}

void channel_finite_absmax(const float* x, const ChannelLayout& L, float* out) {
    // One channel: split its single span over threads.
    if (L.channels == 1 && L.outer == 1) {
        const int threads = std::max(1, std::min<int>(worker_threads(), static_cast<int>(L.inner >> 16)));
        std::vector<uint32_t> part(static_cast<size_t>(threads), 0);
        const int64_t chunk = (L.inner + threads - 1) / threads;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
        for (int t = 0; t < threads; ++t) {
            const int64_t b = std::min(L.inner, t * chunk), e = std::min(L.inner, b + chunk);
            part[t] = absmax_bits_span(x + b, e - b);
        }
        out[0] = bits_float(*std::max_element(part.begin(), part.end()));
        return;
    }
    const auto stats = channel_stats(x, L, false);
    for (int64_t c = 0; c < L.channels; ++c) out[c] = bits_float(stats[c].amax);
}

void channel_finite_range(const float* x, const ChannelLayout& L, float* mins, float* maxs) {
    if (L.channels == 1 && L.outer == 1) {
        const int threads = std::max(1, std::min<int>(worker_threads(), static_cast<int>(L.inner >> 16)));
        std::vector<RangeAcc> part(static_cast<size_t>(threads));
        const int64_t chunk = (L.inner + threads - 1) / threads;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
        for (int t = 0; t < threads; ++t) {
            const int64_t b = std::min(L.inner, t * chunk), e = std::min(L.inner, b + chunk);
            range_span(x + b, e - b, &part[t].lo, &part[t].hi);
        }
        RangeAcc all;
        for (auto& p : part) all.merge(p);
        mins[0] = from_sortable_key(all.lo);
        maxs[0] = from_sortable_key(all.hi);
        return;
    }
    const auto stats = channel_stats(x, L, true);
    for (int64_t c = 0; c < L.channels; ++c) {
        mins[c] = from_sortable_key(stats[c].lo);
        maxs[c] = from_sortable_key(stats[c].hi);
    }
}

}  // namespace ql::kernels
