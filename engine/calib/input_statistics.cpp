// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/input_statistics.h"

#include <ATen/Functions.h>

#include <algorithm>

namespace ql {

InputStatistics::InputStatistics(bool conv_input, InputStatisticsOptions options) : conv_(conv_input), options_(options) {
    if (options_.histogram) histogram_ = std::make_unique<ActivationHistogram>();
}

void InputStatistics::add(const at::Tensor& x_in) {
    const at::Tensor x = x_in.detach().to(at::kFloat);
    if (x.numel() == 0) return;
    amax_ = std::max(amax_, x.abs().max().item<double>());
    // Channel-wise statistics see features last.
    const at::Tensor rows = conv_ ? x.permute({0, 2, 3, 1}).reshape({-1, x.size(1)}) : x.reshape({-1, x.size(-1)});
    if (options_.channel_amax) {
        const at::Tensor m = std::get<0>(rows.abs().max(0));
        channel_amax_ = channel_amax_.defined() ? at::maximum(channel_amax_, m) : m.clone();
    }
    if (histogram_) histogram_->add(x);
    const int64_t units = conv_ ? x.size(0) : rows.size(0);
    if (options_.sample_rows > 0 && sampled_ < options_.sample_rows) {
        const at::Tensor source = conv_ ? x : rows;
        // Every stride-th unit of the whole pass, so the sample spans all batches.
        const int64_t stride = options_.expected_rows > options_.sample_rows
                                   ? options_.expected_rows / options_.sample_rows
                                   : 1;
        const int64_t first = (stride - rows_ % stride) % stride;
        if (first < units) {
            at::Tensor picked = source.slice(0, first, units, stride);
            picked = picked.slice(0, 0, std::min<int64_t>(picked.size(0), options_.sample_rows - sampled_));
            sampled_ += picked.size(0);
            sample_parts_.push_back(picked.clone());
        }
    }
    rows_ += units;
}

at::Tensor InputStatistics::samples() const {
    if (sample_parts_.empty()) return at::Tensor();
    return at::cat(sample_parts_, 0);
}

}  // namespace ql
