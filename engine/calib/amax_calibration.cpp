// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/amax_calibration.h"

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "kernels/channel_reduce.h"
#include "kernels/integer_quant.h"

namespace ql {
namespace {

// numpy's pairwise summation of float64 (numpy/_core/src/umath/loops_utils.h.src,
// DOUBLE_pairwise_sum), which np.sum uses: scipy.stats.entropy sums with it, and the entropy
// search compares divergences that can differ in the last bits.
double numpy_pairwise_sum(const double* a, int64_t n) {
    if (n < 8) {
        double res = 0.;
        for (int64_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        int64_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

bool is_tensor_int_or_fp8(const QuantSpec& spec) {
    const std::string& fam = spec.info->family;
    return (fam == "int" || fam == "fp8") && spec.granularity == Granularity::Tensor;
}

void check_unsigned(const AmaxCalibration& c, const QuantSpec& spec) {
    if (c.unsigned_values && spec.info->family != "int")
        throw UserError("amax calibration: unsigned_values applies to int formats only, not " + spec.info->name);
}

void check_candidates(const AmaxCalibration& c, int64_t bins, const char* method) {
    if (c.stride < 1) throw UserError(std::string(method) + " calibration: stride must be at least 1, got " + std::to_string(c.stride));
    if (c.start_bin < 0 || c.start_bin >= bins)
        throw UserError(std::string(method) + " calibration: start_bin " + std::to_string(c.start_bin) +
                        " leaves no candidate in a histogram of " + std::to_string(bins) + " bins");
}

double percentile_amax(const ActivationHistogram& h, double percentile) {
    if (!(percentile >= 0 && percentile <= 100))
        throw UserError("percentile calibration: percentile must be in [0, 100], got " + std::to_string(percentile));
    const std::vector<double>& counts = h.counts();
    const double total = h.total_count();
    // cdf = np.cumsum(hist / total); idx = np.searchsorted(cdf, p / 100) (first cdf >= p / 100).
    const double target = percentile / 100;
    double cdf = 0;
    size_t idx = 0;
    for (; idx < counts.size(); ++idx) {
        cdf += counts[idx] / total;
        if (cdf >= target) break;
    }
    return double(h.bin_edges()[std::min(idx, h.bin_edges().size() - 1)]);
}

// Fake quantization of the bin centres with amax `a`, into y.
void quantize_centres(const std::vector<float>& x, std::vector<float>& y, const QuantSpec& spec, bool unsigned_values,
                      float a) {
    if (unsigned_values) {
        // [0, a] onto 2^bits - 1 steps: the asymmetric integer kernel with the range fixed to
        // [0, a] (zero point 0), i.e. Model Optimizer's unsigned quantizer up to rounding.
        const kernels::IntFormat f{spec.info->element_bits, true};
        const kernels::IntParams p = kernels::int_params_for_range(0.0f, a, f);
        const kernels::ChannelLayout L{1, 1, static_cast<int64_t>(x.size())};
        kernels::int_fake_quant_channels(x.data(), y.data(), L, &p, f);
        return;
    }
    QuantSpec s = spec;
    s.fixed_amax = a;
    fake_quantize_buffer(x.data(), y.data(), {static_cast<int64_t>(x.size())}, s);
}

double mse_amax(const ActivationHistogram& h, const AmaxCalibration& c, const QuantSpec& spec) {
    if (!is_tensor_int_or_fp8(spec) && spec.info->family != "nvfp4")
        throw UserError("mse calibration needs a per-tensor int or fp8 quantizer or nvfp4 (whose global scale the amax "
                        "sets), not " + spec.info->name);
    check_unsigned(c, spec);
    const std::vector<float>& edges = h.bin_edges();
    const std::vector<double>& counts = h.counts();
    // Model Optimizer pairs centres and counts elementwise; with arange's extra edge there is
    // one centre more than counts (it would fail to broadcast): use the bins that have counts.
    const size_t n = std::min(edges.size() - 1, counts.size());
    check_candidates(c, static_cast<int64_t>(n), "mse");
    std::vector<float> centres(n);
    for (size_t i = 0; i < n; ++i) centres[i] = (edges[i + 1] + edges[i]) / 2.0f;
    // Per-tensor int / fp8 with a fixed amax quantize each value on its own, so only the bins
    // that hold values matter (re-binned histograms are mostly empty). NVFP4's block scales
    // depend on the neighbouring centres: it keeps them all.
    std::vector<float> x;
    std::vector<double> w;
    if (is_tensor_int_or_fp8(spec)) {
        for (size_t i = 0; i < n; ++i)
            if (counts[i] != 0) {
                x.push_back(centres[i]);
                w.push_back(counts[i]);
            }
    } else {
        x = centres;
        w.assign(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(n));
    }
    std::vector<float> q(x.size());
    double best = std::numeric_limits<double>::infinity();
    float best_amax = centres[static_cast<size_t>(c.start_bin)];
    for (size_t k = static_cast<size_t>(c.start_bin); k < n; k += static_cast<size_t>(c.stride)) {
        quantize_centres(x, q, spec, c.unsigned_values, centres[k]);
        double err = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double d = double(q[i] - x[i]);
            err += d * d * w[i];
        }
        err /= double(n);  // the mean over all bins, as Model Optimizer (does not change the argmin)
        if (err < best) {  // first minimum, as np.argmin
            best = err;
            best_amax = centres[k];
        }
    }
    return double(best_amax);
}

// Quantization levels on the non-negative side for the entropy method.
int64_t entropy_levels(const AmaxCalibration& c, const QuantSpec& spec) {
    if (!is_tensor_int_or_fp8(spec))
        throw UserError("entropy calibration needs a per-tensor int or fp8 quantizer, not " + spec.info->name +
                        (spec.info->family == "int" || spec.info->family == "fp8" ? " at this granularity" : ""));
    check_unsigned(c, spec);
    if (spec.info->family == "int") return int64_t(1) << (spec.info->element_bits - 1 + (c.unsigned_values ? 1 : 0));
    int64_t levels = 0;
    for (float v : spec.info->element_values)
        if (v >= 0) ++levels;
    return levels;
}

double entropy_amax(const ActivationHistogram& h, const AmaxCalibration& c, const QuantSpec& spec) {
    const int64_t levels = entropy_levels(c, spec);
    std::vector<double> bins = h.counts();
    const int64_t stop = static_cast<int64_t>(bins.size());
    check_candidates(c, stop, "entropy");
    if (stop >= 2) bins[0] = bins[1];  // as Model Optimizer: tame the spike of (near-)zeros

    // suffix[i] = sum of bins[i:]
    std::vector<double> suffix(static_cast<size_t>(stop) + 1, 0.0);
    for (int64_t i = stop - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + bins[i];

    std::vector<int64_t> level_of(static_cast<size_t>(stop));
    std::vector<double> level_sum(static_cast<size_t>(levels)), level_n(static_cast<size_t>(levels));
    std::vector<double> p(static_cast<size_t>(stop)), q(static_cast<size_t>(stop)), terms(static_cast<size_t>(stop));
    double best = std::numeric_limits<double>::infinity();
    int64_t best_i = -1;
    for (int64_t i = c.start_bin; i <= stop; i += c.stride) {
        if (i == 0) continue;
        // space = np.linspace(0, i, levels + 1) (k * step, last = i exactly); bin j of the
        // histogram goes to level d with space[d] <= j < space[d + 1] (np.digitize - 1).
        const double step = double(i) / double(levels);
        auto space = [&](int64_t k) { return k == levels ? double(i) : double(k) * step; };
        std::fill(level_sum.begin(), level_sum.end(), 0.0);
        std::fill(level_n.begin(), level_n.end(), 0.0);
        for (int64_t j = 0; j < i; ++j) {
            int64_t d = std::min<int64_t>(static_cast<int64_t>(double(j) / step), levels - 1);
            while (d + 1 <= levels && space(d + 1) <= double(j)) ++d;
            while (d > 0 && space(d) > double(j)) --d;
            level_of[j] = d;
            if (bins[j] != 0) {
                level_sum[d] += bins[j];
                level_n[d] += 1;
            }
        }
        // Expanded quantized distribution q (each non-empty bin gets its level's mean) and the
        // reference p (the clipped tail folded into the last bin).
        for (int64_t j = 0; j < i; ++j) {
            const int64_t d = level_of[j];
            q[j] = bins[j] != 0 ? level_sum[d] / level_n[d] : 0.0;
            p[j] = bins[j];
        }
        p[i - 1] += suffix[i];
        // scipy.stats.entropy(p, q): normalise both, sum rel_entr(p, q).
        const double psum = numpy_pairwise_sum(p.data(), i);
        const double qsum = numpy_pairwise_sum(q.data(), i);
        for (int64_t j = 0; j < i; ++j) {
            const double pk = 1.0 * p[j] / psum;
            const double qk = 1.0 * q[j] / qsum;
            if (pk > 0 && qk > 0)
                terms[j] = pk * std::log(pk / qk);
            else if (pk == 0 && qk >= 0)
                terms[j] = 0;
            else
                terms[j] = std::numeric_limits<double>::infinity();
        }
        const double kl = numpy_pairwise_sum(terms.data(), i);
        // The LAST minimum (Model Optimizer searches the reversed list); NaN never wins.
        if (!std::isnan(kl) && (best_i < 0 || kl <= best)) {
            best = kl;
            best_i = i;
        }
    }
    if (best_i < 0) best_i = stop;  // every divergence NaN (degenerate histogram): keep the full range
    return double(h.bin_edges()[static_cast<size_t>(best_i)]);
}

}  // namespace

double calibrate_amax(const ActivationHistogram& h, const AmaxCalibration& c, const QuantSpec& spec) {
    if (spec.info == nullptr) throw UserError("amax calibration: the quantizer has no format");
    if (h.empty()) throw UserError("amax calibration: no calibration data was collected for this quantizer");
    if (c.method == AmaxMethod::Max) return h.amax();
    if (h.counts().empty()) return 0.0;  // only zeros were seen
    switch (c.method) {
        case AmaxMethod::Percentile:
            return percentile_amax(h, c.percentile);
        case AmaxMethod::Mse:
            return mse_amax(h, c, spec);
        case AmaxMethod::Entropy:
            return entropy_amax(h, c, spec);
        case AmaxMethod::Max:
            break;
    }
    return h.amax();
}

AmaxMethod parse_amax_method(const std::string& name) {
    if (name == "max") return AmaxMethod::Max;
    if (name == "percentile") return AmaxMethod::Percentile;
    if (name == "mse") return AmaxMethod::Mse;
    if (name == "entropy") return AmaxMethod::Entropy;
    throw UserError("unknown calibration method '" + name + "' (max, percentile, mse or entropy)");
}

std::string amax_method_name(AmaxMethod method) {
    switch (method) {
        case AmaxMethod::Max: return "max";
        case AmaxMethod::Percentile: return "percentile";
        case AmaxMethod::Mse: return "mse";
        case AmaxMethod::Entropy: return "entropy";
    }
    return "max";
}

}  // namespace ql
