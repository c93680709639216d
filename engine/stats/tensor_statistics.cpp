// SPDX-License-Identifier: GPL-3.0-or-later
// tensor_statistics (engine/api/layer_stats_api.h): three streaming passes over the buffer, each
// split over the OpenMP threads (kernels/parallel.h) with per-thread partial results merged in a
// fixed order, so the result does not depend on the thread count except for the last bits of
// the double sums.
//   A: NaN/Inf/zero counts, amax, sum |x|, moments about a pivot, channel absmax, top-k;
//   B: a fine histogram of |x| (8192 bins over [0, amax]) and the log2 |x| histogram;
//   C: the signed histogram over the robust range and the few values inside the fine bins that
//      hold the percentiles' order statistics, which nth_element then makes exact.
// A full sort would be exact too, but O(n log n) with a copy of the tensor; bench/layer_stats_bench.cpp
// times these passes against a memcpy of the same bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/api/errors.h"
#include "engine/api/layer_stats_api.h"
#include "kernels/parallel.h"

namespace ql {
namespace {

constexpr int kFineBins = 8192;
// A fine bin holding more values than this is interpolated instead of collected (memory bound).
constexpr int64_t kMaxExactCandidates = int64_t{1} << 21;
constexpr double kPercents[] = {50, 90, 99, 99.9, 99.99};
constexpr int kLogBinsPerOctave = 4;
// 2^(k/4) for k = 1, 2, 3 rounded to float: the quarter-octave edges inside [1, 2).
const float kQuarterEdges[3] = {1.18920712f, 1.41421356f, 1.68179283f};

int thread_count(int64_t n) {
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kernels::worker_threads(), n / 65536)));
}

// Quarter-octave index floor(4 log2 a) of a positive finite float, from its bits (exact at the
// float-rounded edges; log2f would cost more than the rest of the pass).
int quarter_octave(float a) {
    uint32_t bits;
    std::memcpy(&bits, &a, 4);
    int e = static_cast<int>((bits >> 23) & 0xFF);
    if (e == 0) {  // subnormal: renormalise through frexp (rare)
        int ex;
        const float m = std::frexp(a, &ex);  // a = m 2^ex, m in [0.5, 1)
        a = m * 2.0f;
        e = ex - 1 + 127;
        std::memcpy(&bits, &a, 4);
    }
    const uint32_t mant_bits = (bits & 0x7FFFFF) | (127u << 23);
    float m;
    std::memcpy(&m, &mant_bits, 4);
    const int sub = (m >= kQuarterEdges[0]) + (m >= kQuarterEdges[1]) + (m >= kQuarterEdges[2]);
    return (e - 127) * kLogBinsPerOctave + sub;
}

struct TopEntry {
    float abs;
    int64_t index;
};
// a ranks before b: larger |x|, then lower index.
bool ranks_before(const TopEntry& a, const TopEntry& b) { return a.abs > b.abs || (a.abs == b.abs && a.index < b.index); }

struct PassA {
    int64_t nan = 0, inf = 0, zeros = 0, finite = 0;
    float amax = 0;
    double sum_abs = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    int64_t first_row = 0;
    std::vector<float> channel;  // rows first_row.. (or all columns)
    std::vector<TopEntry> heap;  // the k best so far; heap front = the worst of them
};

// Visits [b, e) of a [rows, cols] matrix one row segment at a time: f(row, col0, ptr, count).
template <class F>
void for_row_segments(const float* data, int64_t cols, int64_t b, int64_t e, const F& f) {
    while (b < e) {
        const int64_t row = b / cols, col = b % cols;
        const int64_t count = std::min(e - b, cols - col);
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
        float worst = -1.0f;  // |x| of the heap front once the heap is full
        for_row_segments(data, cols, b, e, [&](int64_t row, int64_t col0, const float* x, int64_t count) {
            float row_max = 0;
            float* colmax = channels_in_columns ? p.channel.data() + col0 : nullptr;
            const int64_t base = row * cols + col0;
            for (int64_t i = 0; i < count; ++i) {
                const float v = x[i];
                if (!std::isfinite(v)) {
                    (std::isnan(v) ? p.nan : p.inf)++;
                    continue;
                }
                const float av = std::fabs(v);
                p.zeros += av == 0.0f;
                p.amax = std::max(p.amax, av);
                row_max = std::max(row_max, av);
                if (colmax) colmax[i] = std::max(colmax[i], av);
                p.sum_abs += av;
                const double d = static_cast<double>(v) - pivot, d2 = d * d;
                p.s1 += d;
                p.s2 += d2;
                p.s3 += d2 * d;
                p.s4 += d2 * d2;
                if (k && av > worst) {
                    // Indices rise within a thread, so an equal |x| never beats the front.
                    p.heap.push_back({av, base + i});
                    std::push_heap(p.heap.begin(), p.heap.end(), ranks_before);
                    if (p.heap.size() > k) {
                        std::pop_heap(p.heap.begin(), p.heap.end(), ranks_before);
                        p.heap.pop_back();
                    }
                    if (p.heap.size() == k) worst = p.heap.front().abs;
                }
            }
            p.finite += count;
            if (!channels_in_columns) {
                float& c = p.channel[static_cast<size_t>(row - p.first_row)];
                c = std::max(c, row_max);
            }
        });
        p.finite -= p.nan + p.inf;
    });
    int64_t finite = 0;
    double sum_abs = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    float amax = 0;
    std::vector<TopEntry> top;
    for (const PassA& p : a) {
        st.nan_count += p.nan;
        st.inf_count += p.inf;
        st.zero_count += p.zeros;
        finite += p.finite;
        amax = std::max(amax, p.amax);
        sum_abs += p.sum_abs;
        s1 += p.s1;
        s2 += p.s2;
        s3 += p.s3;
        s4 += p.s4;
        for (size_t i = 0; i < p.channel.size(); ++i) {
            double& c = st.channel_absmax[channels_in_columns ? i : static_cast<size_t>(p.first_row) + i];
            c = std::max(c, static_cast<double>(p.channel[i]));
        }
        top.insert(top.end(), p.heap.begin(), p.heap.end());
    }
    std::sort(top.begin(), top.end(), ranks_before);
    if (top.size() > k) top.resize(k);
    for (const TopEntry& t : top) st.top_outliers.push_back({{t.index / cols, t.index % cols}, data[t.index]});
    st.amax = amax;
    if (finite == 0) return st;
    const double nf = static_cast<double>(finite);
    const double md = s1 / nf;
    st.mean = pivot + md;
    const double m2 = std::max(0.0, s2 / nf - md * md);
    const double m4 = s4 / nf - 4 * md * s3 / nf + 6 * md * md * s2 / nf - 3 * md * md * md * md;
    st.std = std::sqrt(m2);
    st.kurtosis = m2 > 0 ? std::max(0.0, m4) / (m2 * m2) : 0.0;
    st.max_over_mean_abs = sum_abs > 0 ? amax / (sum_abs / nf) : 0.0;

    // ---- Pass B: fine |x| histogram, log2 histogram
    const float inv_width = amax > 0 ? static_cast<float>(kFineBins) / amax : 0.0f;
    auto fine_bin = [inv_width](float av) { return std::min(kFineBins - 1, static_cast<int>(av * inv_width)); };
    const int log_bins = bins;
    const int log_hi_q = amax > 0 ? quarter_octave(amax) + 1 : 1;
    const int log_lo_q = log_hi_q - log_bins;
    std::vector<std::vector<int64_t>> fine(static_cast<size_t>(threads)), logh(static_cast<size_t>(threads));
    std::vector<int64_t> log_under(static_cast<size_t>(threads), 0);
    kernels::parallel_chunks(threads, n, 1, [&](int t, int64_t b, int64_t e) {
        auto& f = fine[static_cast<size_t>(t)];
        auto& l = logh[static_cast<size_t>(t)];
        f.assign(kFineBins, 0);
        l.assign(static_cast<size_t>(log_bins), 0);
        int64_t under = 0;
        for (int64_t i = b; i < e; ++i) {
            const float v = data[i];
            if (!std::isfinite(v)) continue;
            const float av = std::fabs(v);
            ++f[static_cast<size_t>(fine_bin(av))];
            if (av == 0.0f) continue;
            const int q = quarter_octave(av) - log_lo_q;
            if (q < 0)
                ++under;
            else
                ++l[static_cast<size_t>(std::min(q, log_bins - 1))];
        }
        log_under[static_cast<size_t>(t)] = under;
    });
    std::vector<int64_t> fine_all(kFineBins, 0);
    st.abs_log_histogram.lo = static_cast<double>(log_lo_q) / kLogBinsPerOctave;
    st.abs_log_histogram.hi = static_cast<double>(log_hi_q) / kLogBinsPerOctave;
    st.abs_log_histogram.counts.assign(static_cast<size_t>(log_bins), 0.0);
    for (int t = 0; t < threads; ++t) {
        for (int i = 0; i < kFineBins; ++i) fine_all[static_cast<size_t>(i)] += fine[static_cast<size_t>(t)][static_cast<size_t>(i)];
        for (int i = 0; i < log_bins; ++i)
            st.abs_log_histogram.counts[static_cast<size_t>(i)] += static_cast<double>(logh[static_cast<size_t>(t)][static_cast<size_t>(i)]);
        st.abs_log_histogram.underflow += static_cast<double>(log_under[static_cast<size_t>(t)]);
    }
    std::vector<int64_t> cum(kFineBins + 1, 0);  // cum[i] = values in bins < i
    for (int i = 0; i < kFineBins; ++i) cum[static_cast<size_t>(i) + 1] = cum[static_cast<size_t>(i)] + fine_all[static_cast<size_t>(i)];
    auto bin_of_rank = [&](int64_t r) {
        return static_cast<int>(std::upper_bound(cum.begin(), cum.end(), r) - cum.begin()) - 1;
    };

    // Order statistics the percentiles need and the fine bins that hold them.
    struct RankNeed {
        int64_t rank;
        int bin;
    };
    std::vector<RankNeed> needs;
    std::vector<double> positions;
    for (double p : kPercents) {
        const double r = p / 100.0 * (nf - 1);
        positions.push_back(r);
        const int64_t lo = static_cast<int64_t>(std::floor(r));
        const int64_t hi = std::min<int64_t>(lo + 1, finite - 1);
        for (int64_t rank : {lo, hi}) needs.push_back({rank, bin_of_rank(rank)});
    }
    std::vector<int> slot_of(kFineBins, -1);
    std::vector<int> slot_bins;
    for (const RankNeed& r : needs)
        if (slot_of[static_cast<size_t>(r.bin)] < 0 && fine_all[static_cast<size_t>(r.bin)] <= kMaxExactCandidates) {
            slot_of[static_cast<size_t>(r.bin)] = static_cast<int>(slot_bins.size());
            slot_bins.push_back(r.bin);
        }

    // Robust range from the fine bin holding P99.99's upper order statistic.
    const double p9999_edge = static_cast<double>(needs.back().bin + 1) * static_cast<double>(amax) / kFineBins;
    double R = std::min(static_cast<double>(amax), 2.0 * p9999_edge);
    if (!(R > 0)) R = 1.0;
    st.histogram.lo = -R;
    st.histogram.hi = R;
    st.histogram.counts.assign(static_cast<size_t>(bins), 0.0);

    // ---- Pass C: signed histogram, percentile candidates
    const double hist_scale = bins / (2.0 * R);
    std::vector<std::vector<int64_t>> sh(static_cast<size_t>(threads));
    std::vector<std::vector<std::vector<float>>> cand(static_cast<size_t>(threads));
    std::vector<std::pair<int64_t, int64_t>> flows(static_cast<size_t>(threads));
    const bool any_slots = !slot_bins.empty();
    kernels::parallel_chunks(threads, n, 1, [&](int t, int64_t b, int64_t e) {
        auto& h = sh[static_cast<size_t>(t)];
        auto& c = cand[static_cast<size_t>(t)];
        h.assign(static_cast<size_t>(bins), 0);
        c.resize(slot_bins.size());
        int64_t under = 0, over = 0;
        for (int64_t i = b; i < e; ++i) {
            const float v = data[i];
            if (!std::isfinite(v)) continue;
            const double dv = v;
            if (dv < -R) {
                ++under;
            } else if (dv > R) {
                ++over;
            } else {
                ++h[static_cast<size_t>(std::min<int64_t>(bins - 1, static_cast<int64_t>((dv + R) * hist_scale)))];
            }
            if (any_slots) {
                const float av = std::fabs(v);
                const int s = slot_of[static_cast<size_t>(fine_bin(av))];
                if (s >= 0) c[static_cast<size_t>(s)].push_back(av);
            }
        }
        flows[static_cast<size_t>(t)] = {under, over};
    });
    for (int t = 0; t < threads; ++t) {
        for (int i = 0; i < bins; ++i) st.histogram.counts[static_cast<size_t>(i)] += static_cast<double>(sh[static_cast<size_t>(t)][static_cast<size_t>(i)]);
        st.histogram.underflow += static_cast<double>(flows[static_cast<size_t>(t)].first);
        st.histogram.overflow += static_cast<double>(flows[static_cast<size_t>(t)].second);
    }
    std::vector<std::vector<float>> merged(slot_bins.size());
    for (size_t s = 0; s < slot_bins.size(); ++s)
        for (int t = 0; t < threads; ++t) {
            const auto& part = cand[static_cast<size_t>(t)][s];
            merged[s].insert(merged[s].end(), part.begin(), part.end());
        }
    auto order_statistic = [&](const RankNeed& r) -> double {
        const int64_t within = r.rank - cum[static_cast<size_t>(r.bin)];
        const int s = slot_of[static_cast<size_t>(r.bin)];
        if (s >= 0) {
            auto& v = merged[static_cast<size_t>(s)];
            std::nth_element(v.begin(), v.begin() + within, v.end());
            return v[static_cast<size_t>(within)];
        }
        // Too many values in one fine bin: assume them spread evenly over it.
        const double w = static_cast<double>(amax) / kFineBins;
        return (r.bin + (static_cast<double>(within) + 0.5) / static_cast<double>(fine_all[static_cast<size_t>(r.bin)])) * w;
    };
    for (size_t i = 0; i < positions.size(); ++i) {
        const double lo = order_statistic(needs[2 * i]), hi = order_statistic(needs[2 * i + 1]);
        const double frac = positions[i] - std::floor(positions[i]);
        st.percentiles.emplace_back(kPercents[i], lo + frac * (hi - lo));
    }
    return st;
}

}  // namespace ql
