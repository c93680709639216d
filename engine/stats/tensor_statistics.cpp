// SPDX-License-Identifier: GPL-3.0-or-later
// tensor_statistics (engine/core/layer_stats_types.h) in two streaming passes, each split over the
// OpenMP threads (kernels/parallel.h) with per-thread partial results merged in a fixed order:
//   A: NaN/Inf/zero counts, amax, sum |x|, moments about a pivot, channel absmax, top-k, and a
//      histogram of the bits of |x| shifted right by 15 ("keys": the exponent and the top 8
//      mantissa bits: 65536 cells, 256 per octave, ordered as |x| is). The cells give the log2
//      histogram (merged into quarter octaves) and locate each percentile's order statistics
//      in one cell of relative width 2^-8;
//   C: the signed histogram over the robust range, and the values inside the cells that hold the
//      percentiles' order statistics, which nth_element then makes exact.
// A full sort would be exact too, but O(n log n) on a copy of the tensor. The hot loops are
// written as independent lanes so that the compiler vectorises them without reassociating
// (-ffp-contract=off, no fast-math), and built for AVX2 and the baseline (QL_CPU_CLONES).
// bench/layer_stats_bench.cpp times this against a memcpy of the same bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/errors.h"
#include "engine/core/layer_stats_types.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/parallel.h"

namespace ql {
namespace {

constexpr int kKeyShift = 15;
constexpr int kKeys = 1 << 16;                  // (bits of |x|) >> 15 for every float
constexpr uint32_t kFiniteLimit = 0x7F800000u;  // |x| bits at or above this: Inf or NaN
// A cell holding more values than this is interpolated instead of collected (memory bound).
constexpr int64_t kMaxExactCandidates = int64_t{1} << 21;
constexpr int64_t kSpan = 1024;                 // elements per vectorised step (fits L1)
constexpr double kPercents[] = {50, 90, 99, 99.9, 99.99};
constexpr int kLogBinsPerOctave = 4;
// 2^(k/4) for k = 1, 2, 3 rounded to float: the quarter-octave edges inside [1, 2).
const float kQuarterEdges[3] = {1.18920712f, 1.41421356f, 1.68179283f};

uint32_t bits_of(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}

float float_of(uint32_t b) {
    float v;
    std::memcpy(&v, &b, 4);
    return v;
}

float key_lower(uint32_t key) { return float_of(key << kKeyShift); }

int thread_count(int64_t n) {
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kernels::worker_threads(), n / 65536)));
}

// Quarter-octave index floor(4 log2 a) of a positive finite float, from its bits (exact at the
// float-rounded edges).
int quarter_octave(float a) {
    uint32_t bits = bits_of(a);
    int e = static_cast<int>((bits >> 23) & 0xFF);
    if (e == 0) {  // subnormal: renormalise through frexp
        int ex;
        const float m = std::frexp(a, &ex);  // a = m 2^ex, m in [0.5, 1)
        bits = bits_of(m * 2.0f);
        e = ex - 1 + 127;
    }
    const float m = float_of((bits & 0x7FFFFF) | (127u << 23));
    const int sub = (m >= kQuarterEdges[0]) + (m >= kQuarterEdges[1]) + (m >= kQuarterEdges[2]);
    return (e - 127) * kLogBinsPerOctave + sub;
}

struct TopEntry {
    float abs;
    int64_t index;
};
// a ranks before b: larger |x|, then lower index.
bool ranks_before(const TopEntry& a, const TopEntry& b) { return a.abs > b.abs || (a.abs == b.abs && a.index < b.index); }

struct Sums {
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0, abs = 0;
};

constexpr int kLanes = 8;

// Max of the |x| bits (>= kFiniteLimit: the span holds Inf or NaN) and the count of zeros.
QL_CPU_CLONES uint32_t span_abs_bits_max(const float* x, int64_t n, int64_t& zeros) {
    uint32_t m[kLanes] = {};
    int32_t z[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            uint32_t b;
            std::memcpy(&b, x + i + j, 4);
            b &= 0x7FFFFFFFu;
            m[j] = std::max(m[j], b);
            z[j] += b == 0;
        }
    for (; i < n; ++i) {
        const uint32_t b = bits_of(x[i]) & 0x7FFFFFFFu;
        m[0] = std::max(m[0], b);
        z[0] += b == 0;
    }
    uint32_t r = 0;
    for (int j = 0; j < kLanes; ++j) {
        r = std::max(r, m[j]);
        zeros += z[j];
    }
    return r;
}

// Power sums of d = x - pivot and sum |x| over finite x, in double.
QL_CPU_CLONES void span_sums(const float* x, int64_t n, double pivot, Sums& out) {
    double a1[kLanes] = {}, a2[kLanes] = {}, a3[kLanes] = {}, a4[kLanes] = {}, aa[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            const double v = x[i + j];
            const double d = v - pivot, d2 = d * d;
            a1[j] += d;
            a2[j] += d2;
            a3[j] += d2 * d;
            a4[j] += d2 * d2;
            aa[j] += std::fabs(v);
        }
    for (; i < n; ++i) {
        const double v = x[i];
        const double d = v - pivot, d2 = d * d;
        a1[0] += d;
        a2[0] += d2;
        a3[0] += d2 * d;
        a4[0] += d2 * d2;
        aa[0] += std::fabs(v);
    }
    for (int j = 0; j < kLanes; ++j) {
        out.s1 += a1[j];
        out.s2 += a2[j];
        out.s3 += a3[j];
        out.s4 += a4[j];
        out.abs += aa[j];
    }
}

QL_CPU_CLONES void span_column_max(const float* x, int64_t n, float* colmax) {
    for (int64_t i = 0; i < n; ++i) colmax[i] = std::max(colmax[i], std::fabs(x[i]));
}

// Signed-histogram cell of each finite x: 0..bins-1, bins = below -R, bins + 1 = above R.
QL_CPU_CLONES void span_bins(const float* x, int64_t n, float r, float scale, int32_t bins, int32_t* out) {
    const float last = static_cast<float>(bins - 1);
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float t = std::min(last, std::max(0.0f, (v + r) * scale));
        int32_t b = static_cast<int32_t>(t);
        b = v < -r ? bins : b;
        b = v > r ? bins + 1 : b;
        out[i] = b;
    }
}

struct PassA {
    int64_t nan = 0, inf = 0, zeros = 0, finite = 0;
    uint32_t amax_bits = 0;
    Sums sums;
    int64_t first_row = 0;
    std::vector<float> channel;   // rows first_row.. (or all columns)
    std::vector<TopEntry> heap;   // the k best so far; heap front = the worst of them
    std::vector<int64_t> keys;    // kKeys counts
};

// Visits [b, e) of a [rows, cols] matrix in row segments of at most kSpan: f(row, col0, ptr, count).
template <class F>
void for_spans(const float* data, int64_t cols, int64_t b, int64_t e, const F& f) {
    while (b < e) {
        const int64_t row = b / cols, col = b % cols;
        const int64_t count = std::min({e - b, cols - col, kSpan});
        f(row, col, data + b, count);
        b += count;
    }
}

}  // namespace

TensorStatistics tensor_statistics(const float* data, int64_t rows, int64_t cols, int top_k, int bins,
                                   bool channels_in_columns) {
    if (rows < 0 || cols < 0)
        throw UserError("tensor statistics: shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "] has a negative size");
    if (top_k < 0) throw UserError("tensor statistics: top_k must not be negative, got " + std::to_string(top_k));
    if (bins < 1) throw UserError("tensor statistics: bins must be at least 1, got " + std::to_string(bins));
    const int64_t n = rows * cols;
    if (n > 0 && !data) throw UserError("tensor statistics: no data for a non-empty tensor");
    TensorStatistics st;
    st.numel = n;
    st.channel_absmax.assign(static_cast<size_t>(channels_in_columns ? cols : rows), 0.0);
    if (n == 0) return st;

    // Pivot for the moments: the mean of the first (up to 4096) finite values, so that the
    // shifted power sums do not cancel when |mean| >> std.
    double pivot = 0;
    {
        int64_t m = 0;
        for (int64_t i = 0; i < n && m < 4096; ++i)
            if (std::isfinite(data[i])) {
                pivot += data[i];
                ++m;
            }
        if (m) pivot /= static_cast<double>(m);
    }

    const int threads = thread_count(n);
    const size_t k = static_cast<size_t>(top_k);
    // ---- Pass A
    std::vector<PassA> a(static_cast<size_t>(threads));
    kernels::parallel_chunks(threads, n, 1, [&](int t, int64_t b, int64_t e) {
        PassA& p = a[static_cast<size_t>(t)];
        p.first_row = b / cols;
        p.channel.assign(static_cast<size_t>(channels_in_columns ? cols : (e - 1) / cols - p.first_row + 1), 0.0f);
        p.heap.reserve(k + 1);
        p.keys.assign(kKeys, 0);
        std::vector<uint32_t> keys(kKeys, 0);  // flushed into p.keys before it could overflow
        int64_t since_flush = 0;
        float worst = -1.0f;  // |x| of the heap front once the heap is full
        auto offer = [&](float av, int64_t index) {
            // Indices rise within a thread, so an equal |x| never beats the front.
            p.heap.push_back({av, index});
            std::push_heap(p.heap.begin(), p.heap.end(), ranks_before);
            if (p.heap.size() > k) {
                std::pop_heap(p.heap.begin(), p.heap.end(), ranks_before);
                p.heap.pop_back();
            }
            if (p.heap.size() == k) worst = p.heap.front().abs;
        };
        for_spans(data, cols, b, e, [&](int64_t row, int64_t col0, const float* x, int64_t count) {
            const int64_t base = row * cols + col0;
            int64_t zeros = 0;
            const uint32_t max_bits = span_abs_bits_max(x, count, zeros);
            float span_max = 0;
            if (max_bits < kFiniteLimit) {
                // All finite: the vectorised path.
                span_max = float_of(max_bits);
                p.zeros += zeros;
                p.finite += count;
                p.amax_bits = std::max(p.amax_bits, max_bits);
                span_sums(x, count, pivot, p.sums);
                if (channels_in_columns) span_column_max(x, count, p.channel.data() + col0);
                for (int64_t i = 0; i < count; ++i) ++keys[(bits_of(x[i]) & 0x7FFFFFFFu) >> kKeyShift];
                if (k && span_max > worst)
                    for (int64_t i = 0; i < count; ++i) {
                        const float av = std::fabs(x[i]);
                        if (av > worst) offer(av, base + i);
                    }
            } else {
                for (int64_t i = 0; i < count; ++i) {
                    const float v = x[i];
                    if (!std::isfinite(v)) {
                        (std::isnan(v) ? p.nan : p.inf)++;
                        continue;
                    }
                    const float av = std::fabs(v);
                    const uint32_t ab = bits_of(av);
                    p.zeros += ab == 0;
                    ++p.finite;
                    p.amax_bits = std::max(p.amax_bits, ab);
                    span_max = std::max(span_max, av);
                    span_sums(x + i, 1, pivot, p.sums);
                    if (channels_in_columns) p.channel[static_cast<size_t>(col0 + i)] = std::max(p.channel[static_cast<size_t>(col0 + i)], av);
                    ++keys[ab >> kKeyShift];
                    if (k && av > worst) offer(av, base + i);
                }
            }
            if (!channels_in_columns) {
                float& c = p.channel[static_cast<size_t>(row - p.first_row)];
                c = std::max(c, span_max);
            }
            since_flush += count;
            if (since_flush > (int64_t{1} << 31)) {
                for (int i = 0; i < kKeys; ++i) p.keys[static_cast<size_t>(i)] += keys[static_cast<size_t>(i)];
                std::fill(keys.begin(), keys.end(), 0u);
                since_flush = 0;
            }
        });
        for (int i = 0; i < kKeys; ++i) p.keys[static_cast<size_t>(i)] += keys[static_cast<size_t>(i)];
    });
    int64_t finite = 0;
    Sums sums;
    uint32_t amax_bits = 0;
    std::vector<int64_t> key_counts(kKeys, 0);
    std::vector<TopEntry> top;
    for (const PassA& p : a) {
        st.nan_count += p.nan;
        st.inf_count += p.inf;
        st.zero_count += p.zeros;
        finite += p.finite;
        amax_bits = std::max(amax_bits, p.amax_bits);
        sums.s1 += p.sums.s1;
        sums.s2 += p.sums.s2;
        sums.s3 += p.sums.s3;
        sums.s4 += p.sums.s4;
        sums.abs += p.sums.abs;
        for (size_t i = 0; i < p.channel.size(); ++i) {
            double& c = st.channel_absmax[channels_in_columns ? i : static_cast<size_t>(p.first_row) + i];
            c = std::max(c, static_cast<double>(p.channel[i]));
        }
        for (int i = 0; i < kKeys; ++i) key_counts[static_cast<size_t>(i)] += p.keys[static_cast<size_t>(i)];
        top.insert(top.end(), p.heap.begin(), p.heap.end());
    }
    std::sort(top.begin(), top.end(), ranks_before);
    if (top.size() > k) top.resize(k);
    for (const TopEntry& t : top) st.top_outliers.push_back({{t.index / cols, t.index % cols}, data[t.index]});
    const float amax = float_of(amax_bits);
    st.amax = amax;
    if (finite == 0) return st;
    const double nf = static_cast<double>(finite);
    const double md = sums.s1 / nf;
    st.mean = pivot + md;
    const double m2 = std::max(0.0, sums.s2 / nf - md * md);
    const double m4 = sums.s4 / nf - 4 * md * sums.s3 / nf + 6 * md * md * sums.s2 / nf - 3 * md * md * md * md;
    st.std = std::sqrt(m2);
    st.kurtosis = m2 > 0 ? std::max(0.0, m4) / (m2 * m2) : 0.0;
    st.max_over_mean_abs = sums.abs > 0 ? amax / (sums.abs / nf) : 0.0;

    // log2 |x| histogram from the key cells: each cell goes to the quarter octave of its lower
    // edge (edges 2^(k/4) rounded up to the 8-bit mantissa grid of the cells).
    const int log_hi_q = amax > 0 ? quarter_octave(amax) + 1 : 1;
    const int log_lo_q = log_hi_q - bins;
    st.abs_log_histogram.lo = static_cast<double>(log_lo_q) / kLogBinsPerOctave;
    st.abs_log_histogram.hi = static_cast<double>(log_hi_q) / kLogBinsPerOctave;
    st.abs_log_histogram.counts.assign(static_cast<size_t>(bins), 0.0);
    for (uint32_t key = 0; key < static_cast<uint32_t>(kKeys); ++key) {
        double c = static_cast<double>(key_counts[key]);
        if (key == 0) c -= static_cast<double>(st.zero_count);  // zeros are not in the log histogram
        if (c == 0) continue;
        const float lower = key == 0 ? std::numeric_limits<float>::denorm_min() : key_lower(key);
        const int q = quarter_octave(lower) - log_lo_q;
        if (q < 0)
            st.abs_log_histogram.underflow += c;
        else
            st.abs_log_histogram.counts[static_cast<size_t>(std::min(q, bins - 1))] += c;
    }

    // Order statistics the percentiles need and the key cells that hold them.
    std::vector<int64_t> cum(kKeys + 1, 0);  // cum[i] = values in cells < i
    for (int i = 0; i < kKeys; ++i) cum[static_cast<size_t>(i) + 1] = cum[static_cast<size_t>(i)] + key_counts[static_cast<size_t>(i)];
    struct RankNeed {
        int64_t rank;
        uint32_t cell;
    };
    std::vector<RankNeed> needs;
    std::vector<double> positions;
    for (double p : kPercents) {
        const double r = p / 100.0 * (nf - 1);
        positions.push_back(r);
        const int64_t lo = static_cast<int64_t>(std::floor(r));
        const int64_t hi = std::min<int64_t>(lo + 1, finite - 1);
        for (int64_t rank : {lo, hi}) {
            const auto cell = static_cast<uint32_t>(std::upper_bound(cum.begin(), cum.end(), rank) - cum.begin() - 1);
            needs.push_back({rank, cell});
        }
    }
    std::vector<int8_t> slot_of(kKeys, -1);
    std::vector<uint32_t> slot_cells;
    for (const RankNeed& r : needs)
        if (slot_of[r.cell] < 0 && key_counts[r.cell] <= kMaxExactCandidates) {
            slot_of[r.cell] = static_cast<int8_t>(slot_cells.size());
            slot_cells.push_back(r.cell);
        }

    // Robust range from the upper edge of the cell holding P99.99's upper order statistic.
    const double p9999_edge = key_lower(needs.back().cell + 1);
    double R = std::min(static_cast<double>(amax), 2.0 * p9999_edge);
    if (!(R > 0)) R = 1.0;
    st.histogram.lo = -R;
    st.histogram.hi = R;

    // ---- Pass C: signed histogram (float32 bin arithmetic), percentile candidates
    const float rf = static_cast<float>(R);
    const float scale = static_cast<float>(bins / (2.0 * R));
    const bool all_finite = st.nan_count == 0 && st.inf_count == 0;
    std::vector<std::vector<int64_t>> sh(static_cast<size_t>(threads));
    std::vector<std::vector<std::vector<float>>> cand(static_cast<size_t>(threads));
    const bool any_slots = !slot_cells.empty();
    kernels::parallel_chunks(threads, n, 1, [&](int t, int64_t b, int64_t e) {
        auto& h = sh[static_cast<size_t>(t)];
        auto& c = cand[static_cast<size_t>(t)];
        h.assign(static_cast<size_t>(bins) + 2, 0);
        c.resize(slot_cells.size());
        int32_t cells[kSpan];
        for (int64_t s = b; s < e; s += kSpan) {
            const int64_t count = std::min(kSpan, e - s);
            const float* x = data + s;
            if (all_finite) {
                span_bins(x, count, rf, scale, bins, cells);
                for (int64_t i = 0; i < count; ++i) ++h[static_cast<size_t>(cells[i])];
            } else {
                for (int64_t i = 0; i < count; ++i)
                    if (std::isfinite(x[i])) {
                        span_bins(x + i, 1, rf, scale, bins, cells);
                        ++h[static_cast<size_t>(cells[0])];
                    }
            }
            if (any_slots)
                for (int64_t i = 0; i < count; ++i) {
                    const uint32_t ab = bits_of(x[i]) & 0x7FFFFFFFu;
                    if (ab >= kFiniteLimit) continue;
                    const int8_t slot = slot_of[ab >> kKeyShift];
                    if (slot >= 0) c[static_cast<size_t>(slot)].push_back(float_of(ab));
                }
        }
    });
    st.histogram.counts.assign(static_cast<size_t>(bins), 0.0);
    for (int t = 0; t < threads; ++t) {
        const auto& h = sh[static_cast<size_t>(t)];
        for (int i = 0; i < bins; ++i) st.histogram.counts[static_cast<size_t>(i)] += static_cast<double>(h[static_cast<size_t>(i)]);
        st.histogram.underflow += static_cast<double>(h[static_cast<size_t>(bins)]);
        st.histogram.overflow += static_cast<double>(h[static_cast<size_t>(bins) + 1]);
    }
    std::vector<std::vector<float>> merged(slot_cells.size());
    for (size_t s = 0; s < slot_cells.size(); ++s)
        for (int t = 0; t < threads; ++t) {
            const auto& part = cand[static_cast<size_t>(t)][s];
            merged[s].insert(merged[s].end(), part.begin(), part.end());
        }
    auto order_statistic = [&](const RankNeed& r) -> double {
        const int64_t within = r.rank - cum[r.cell];
        const int s = slot_of[r.cell];
        if (s >= 0) {
            auto& v = merged[static_cast<size_t>(s)];
            std::nth_element(v.begin(), v.begin() + within, v.end());
            return v[static_cast<size_t>(within)];
        }
        // Too many values in one cell: assume them spread evenly over it (within 2^-8 relative).
        const double lo = key_lower(r.cell), hi = std::min<double>(key_lower(r.cell + 1), amax);
        const double v = lo + (static_cast<double>(within) + 0.5) / static_cast<double>(key_counts[r.cell]) * (hi - lo);
        return std::min(v, static_cast<double>(amax));
    };
    for (size_t i = 0; i < positions.size(); ++i) {
        const double lo = order_statistic(needs[2 * i]), hi = order_statistic(needs[2 * i + 1]);
        const double frac = positions[i] - std::floor(positions[i]);
        st.percentiles.emplace_back(kPercents[i], lo + frac * (hi - lo));
    }
    return st;
}

}  // namespace ql
