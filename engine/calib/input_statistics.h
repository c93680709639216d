// SPDX-License-Identifier: GPL-3.0-or-later
// What calibration records about one layer's inputs: the running amax (max calibration), the
// per-input-channel amax (SmoothQuant), and an evenly spread sample of input rows (AWQ's search
// and the per-layer error report). Linear inputs [..., in] are rows of `in`; Conv2d inputs
// [B, C, H, W] are kept as whole images.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

#include "engine/calib/activation_histogram.h"

namespace ql {

struct InputStatisticsOptions {
    bool channel_amax = false;
    bool histogram = false;          // for percentile / MSE / entropy calibration
    int64_t sample_rows = 0;         // rows (Linear) or images (Conv2d) to keep; 0 = none
    int64_t expected_rows = 0;       // rows the whole pass will show (spreads the sample); 0 = take the first
};

class InputStatistics {
public:
    InputStatistics(bool conv_input, InputStatisticsOptions options);

    void add(const at::Tensor& x);  // non-finite values: UserError naming the layer is the caller's job

    double amax() const { return amax_; }
    int64_t rows() const { return rows_; }
    const at::Tensor& channel_amax() const { return channel_amax_; }  // [in], undefined unless asked
    at::Tensor samples() const;                                       // [n, in] or [n, C, H, W]
    const ActivationHistogram* histogram() const { return histogram_.get(); }

private:
    bool conv_;
    InputStatisticsOptions options_;
    double amax_ = 0;
    int64_t rows_ = 0;
    at::Tensor channel_amax_;
    std::vector<at::Tensor> sample_parts_;
    int64_t sampled_ = 0;
    std::unique_ptr<ActivationHistogram> histogram_;
};

}  // namespace ql
