// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/activation_histogram.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/errors.h"

namespace ql {
namespace {

std::vector<float> to_floats(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    return std::vector<float>(p, p + c.numel());
}

}  // namespace

ActivationHistogram::ActivationHistogram(int64_t num_bins, bool skip_zeros)
    : initial_bins_(num_bins), skip_zeros_(skip_zeros) {
    if (num_bins < 1) throw UserError("activation histogram: num_bins must be at least 1, got " + std::to_string(num_bins));
}

void ActivationHistogram::reset() {
    counts_.clear();
    edges_.clear();
    pending_zeros_ = 0;
    amax_ = 0;
    values_ = 0;
}

double ActivationHistogram::bin_width() const { return edges_.size() < 2 ? 0.0 : double(edges_[1] - edges_[0]); }

double ActivationHistogram::total_count() const {
    double t = 0;
    for (double c : counts_) t += c;
    return t;
}

void ActivationHistogram::add(const at::Tensor& x) {
    if (!x.defined() || !x.is_floating_point())
        throw UserError("activation histogram: expected a floating-point tensor of activations, got " +
                        std::string(x.defined() ? x.dtype().name() : "an undefined tensor"));
    if (x.numel() == 0) return;
    // float32 on the CPU, as Model Optimizer's x.float() (its histc then runs on the CPU here).
    at::Tensor a = x.detach().to(at::kCPU).to(at::kFloat).abs().reshape({-1});
    const int64_t n = a.numel();
    // max propagates NaN and keeps Inf, so only a non-finite maximum needs the full count
    // (calibration passes stay cheap: docs/BENCHMARKS.md "Calibration overhead").
    const float batch_max = a.max().item<float>();
    if (!std::isfinite(batch_max)) {
        const int64_t bad = n - at::isfinite(a).sum().item<int64_t>();
        throw UserError("activation histogram: the batch holds " + std::to_string(bad) +
                        " NaN/Inf value(s); calibration needs finite activations");
    }
    if (skip_zeros_) a = a.masked_select(at::ne(a, 0));

    if (edges_.empty()) {
        if (batch_max == 0.0f) {
            // Range still unknown: keep the zeros for bin 0.
            if (!skip_zeros_) pending_zeros_ += double(n);
            values_ += n;
            return;
        }
        const at::Tensor hist = at::histc(a, initial_bins_, 0, batch_max);
        edges_ = to_floats(at::linspace(0, batch_max, initial_bins_ + 1, at::TensorOptions().dtype(at::kFloat)));
        const std::vector<float> h = to_floats(hist);
        counts_.assign(h.begin(), h.end());
        counts_[0] += pending_zeros_;
        pending_zeros_ = 0;
    } else {
        int64_t bins = static_cast<int64_t>(counts_.size());
        if (batch_max > edges_.back()) {
            // Keep the width, extend the range (float32 arithmetic as Model Optimizer's tensors).
            const float width = edges_[1] - edges_[0];
            bins = static_cast<int64_t>(std::ceil(batch_max / width));
            const float end = batch_max + width;
            edges_ = to_floats(at::arange(0.0, double(end), double(width), at::TensorOptions().dtype(at::kFloat)));
        }
        if (a.numel() > 0) {
            const std::vector<float> h = to_floats(at::histc(a, bins, 0, edges_.back()));
            std::vector<double> merged(h.begin(), h.end());
            for (size_t i = 0; i < counts_.size() && i < merged.size(); ++i) merged[i] += counts_[i];
            counts_.swap(merged);
        } else {
            counts_.resize(static_cast<size_t>(bins), 0.0);
        }
    }
    amax_ = std::max(amax_, double(batch_max));
    values_ += n;
}

}  // namespace ql
