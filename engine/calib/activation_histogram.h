// SPDX-License-Identifier: GPL-3.0-or-later
// Histogram of |x| over calibration batches for one per-tensor activation quantizer, collected
// exactly as NVIDIA Model Optimizer's HistogramCalibrator does with its default torch_hist=True
// (modelopt/torch/quantization/calib/histogram.py, collect()), so that percentile / MSE /
// entropy calibration (amax_calibration.h) picks the same amax as Model Optimizer. Also keeps
// the running max |x| (Model Optimizer's MaxCalibrator).
//
// Collection rule (Model Optimizer 0.47, float32 throughout):
// - first batch with max |x| = m > 0: num_bins bins over [0, m] (torch.histc), edges =
//   linspace(0, m, num_bins + 1);
// - a later batch with max m above the last edge: width = edges[1] - edges[0];
//   num_bins = ceil(m / width); edges = arange(0, m + width, width); the batch is binned over
//   [0, edges.back()] and the old counts are added to the first bins (the old bins line up with
//   the new ones because the width is kept);
// - a batch inside the range is binned over [0, edges.back()] with the current num_bins.
// - skip_zeros drops exact zeros before binning (the running amax is unaffected).
// We replay it with the same ATen operations (histc, linspace, arange) so the counts agree bin
// for bin (tests/engine/activation_calibration_golden_test.cpp). Differences, all where Model
// Optimizer fails or loses counts:
// - counts are summed in double (Model Optimizer adds float32 histograms: a bin past 2^24
//   values stops counting exactly);
// - NaN / Inf in a batch throws UserError and leaves the histogram unchanged (Model Optimizer's
//   torch.histc raises on a non-finite range, so it fails too, with a less clear message);
// - zeros seen before any non-zero value are kept and added to bin 0 once the range is known
//   (Model Optimizer bins an all-zero first batch over [-1, 1] into the middle bin, then divides
//   by a zero width on the next batch); an empty batch is ignored.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ql {

class ActivationHistogram {
public:
    // num_bins >= 1 (UserError otherwise): the bin count of the first range (Model Optimizer's
    // default 2048); it grows when later batches exceed the range.
    explicit ActivationHistogram(int64_t num_bins = 2048, bool skip_zeros = false);

    // Adds |x| of every element of x (any shape, any floating dtype, CPU). UserError for a
    // non-floating tensor or NaN / Inf values (the histogram is left unchanged).
    void add(const at::Tensor& x);

    // True when no value at all has been added.
    bool empty() const { return values_ == 0; }
    // Number of values added (zeros included even with skip_zeros).
    int64_t num_values() const { return values_; }
    // max |x| over everything added (0 when empty): the Max calibrator's amax.
    double amax() const { return amax_; }

    // Bin counts, one per bin (size num_bins(); empty while only zeros have been seen).
    const std::vector<double>& counts() const { return counts_; }
    // Model Optimizer's bin edges, float32 as it computes them: edges[i] is the left edge of
    // bin i. Normally counts().size() + 1 entries; arange() can add one more when m / width is
    // within rounding of an integer, as in Model Optimizer (the calibrators read them as it does).
    const std::vector<float>& bin_edges() const { return edges_; }
    int64_t num_bins() const { return static_cast<int64_t>(counts_.size()); }
    // edges[1] - edges[0] in float32 (0 while there are no bins).
    double bin_width() const;
    // Sum of counts() (values binned; skipped zeros are not counted).
    double total_count() const;
    bool skip_zeros() const { return skip_zeros_; }

    void reset();

private:
    int64_t initial_bins_;
    bool skip_zeros_;
    std::vector<double> counts_;
    std::vector<float> edges_;
    double pending_zeros_ = 0;  // zeros seen before the range was known
    double amax_ = 0;
    int64_t values_ = 0;
};

}  // namespace ql
