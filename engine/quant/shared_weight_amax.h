// SPDX-License-Identifier: GPL-3.0-or-later
// One per-tensor weight amax for a group of fused layers (fused_layers.h): the largest finite
// |w| over the members' current weights. The members' weight quantizers use it instead of their
// own amax (NVFP4: one global scale weight_scale_2 = amax / (6 * 448); FP8 / INT per tensor: one
// scale), as Model Optimizer's export (preprocess_linear_fusion) and llm-compressor's linked
// observers give fused q/k/v and gate/up one scale. Recomputed whenever a member's weight changes
// (its data pointer or version counter), so QAT/QAD steps keep the shards' scale shared.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace ql {

class QuantizableLayer;

class SharedWeightAmax {
public:
    explicit SharedWeightAmax(std::vector<const QuantizableLayer*> members);  // not owned
    float value() const;
    const std::vector<const QuantizableLayer*>& members() const { return members_; }

private:
    std::vector<const QuantizableLayer*> members_;
    mutable std::mutex mutex_;
    mutable std::vector<const void*> data_;
    mutable std::vector<int64_t> versions_;
    mutable float amax_ = 0;
    mutable bool valid_ = false;
};

}  // namespace ql
