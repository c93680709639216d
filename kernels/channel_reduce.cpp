// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/channel_reduce.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

// Statistics as integers (FiniteAbsmax, FiniteRange: kernels/magnitude_bits.h), so that the
// reductions vectorise in the clones.
template <class Stat>
QL_INLINE Stat span_statistic_in_clone(const float* __restrict x, int64_t n) {
    return statistic_of<Stat>(x, n);
}

// The finite amax as the maximum of all magnitude bits (an and and a max per vector, where
// masking out NaN and Inf costs two more), recomputed with the mask only for a span that holds
// NaN or Inf.
// 32 independent lanes (four AVX2 accumulators) keep the loop on load throughput.
template <>
QL_INLINE FiniteAbsmax span_statistic_in_clone<FiniteAbsmax>(const float* __restrict x, int64_t n) {
    constexpr int64_t kLanes = 32;
    uint32_t lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
            const uint32_t a = magnitude_bits(x[i + j]);
            lane[j] = a > lane[j] ? a : lane[j];
        }
    uint32_t m = statistic_of<AnyAbsmax>(x + i, n - i).m;
    for (int64_t j = 0; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
    if (m < kInfBits) return FiniteAbsmax{m};
    return statistic_of<FiniteAbsmax>(x, n);
}

template <class Stat>
Stat span_statistic(const float* x, int64_t n) {
    Stat s;
    run_cpu_clone([&]() QL_CLONE_BODY { s = span_statistic_in_clone<Stat>(x, n); });
    return s;
}

// inner == 1: contiguous rows of `channels` values; acc[c] accumulates channel c.
template <class Stat>
QL_INLINE void rows_statistic_in_clone(const float* __restrict x, int64_t rows, int64_t channels,
                                       Stat* __restrict acc) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) acc[c].add(x[r * channels + c]);
}

template <class Stat>
void rows_statistic(const float* x, int64_t rows, int64_t channels, Stat* acc) {
    run_cpu_clone([&]() QL_CLONE_BODY { rows_statistic_in_clone<Stat>(x, rows, channels, acc); });
}

// Statistics for channels [c0, c1) over outer indices [o0, o1), merged into acc[c - c0].
template <class Stat>
void accumulate(const float* x, const ChannelLayout& L, int64_t o0, int64_t o1, int64_t c0, int64_t c1, Stat* acc) {
    if (L.inner == 1 && c0 == 0 && c1 == L.channels) {
        std::vector<Stat> part(static_cast<size_t>(L.channels));
        rows_statistic(x + o0 * L.channels, o1 - o0, L.channels, part.data());
        for (int64_t c = 0; c < L.channels; ++c) acc[c].merge(part[c]);
        return;
    }
    for (int64_t o = o0; o < o1; ++o)
        for (int64_t c = c0; c < c1; ++c)
            acc[c - c0].merge(span_statistic<Stat>(x + (o * L.channels + c) * L.inner, L.inner));
}

// Splits the work over threads: a single span in contiguous chunks; otherwise along `outer` when
// it is large enough (each chunk keeps its own partial results, merged at the end), or else along
// channels.
template <class Stat>
std::vector<Stat> channel_statistics(const float* x, const ChannelLayout& L) {
    std::vector<Stat> result(static_cast<size_t>(L.channels));
    const int64_t n = L.elements();
    if (n == 0) return result;
    if (L.channels == 1 && L.outer == 1) {
        const int threads = std::max(1, std::min<int>(worker_threads(), static_cast<int>(L.inner >> 16)));
        std::vector<Stat> part(static_cast<size_t>(threads));
        parallel_chunks(threads, L.inner, 1,
                        [&](int t, int64_t b, int64_t e) { part[t] = span_statistic<Stat>(x + b, e - b); });
        for (const Stat& p : part) result[0].merge(p);
        return result;
    }
    const int threads = static_cast<int>(std::min<int64_t>(worker_threads(), std::max<int64_t>(1, n >> 16)));
    if (L.outer >= threads && threads > 1) {
        std::vector<std::vector<Stat>> partial(static_cast<size_t>(threads),
                                               std::vector<Stat>(static_cast<size_t>(L.channels)));
        parallel_chunks(threads, L.outer, 1, [&](int t, int64_t o0, int64_t o1) {
            accumulate(x, L, o0, o1, 0, L.channels, partial[t].data());
        });
        for (auto& p : partial)
            for (int64_t c = 0; c < L.channels; ++c) result[c].merge(p[c]);
        return result;
    }
    parallel_ranges(L.channels, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, L.outer * L.inner)), 1,
                    [&](int64_t c0, int64_t c1) { accumulate(x, L, 0, L.outer, c0, c1, result.data() + c0); });
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
    const auto stats = channel_statistics<FiniteAbsmax>(x, L);
    for (int64_t c = 0; c < L.channels; ++c) out[c] = stats[c].value();
}

void channel_finite_range(const float* x, const ChannelLayout& L, float* mins, float* maxs) {
    const auto stats = channel_statistics<FiniteRange>(x, L);
    for (int64_t c = 0; c < L.channels; ++c) {
        mins[c] = stats[c].min_value();
        maxs[c] = stats[c].max_value();
    }
}

}  // namespace ql::kernels
