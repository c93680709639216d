// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/shared_weight_amax.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "engine/models/quantizable_layer.h"
#include "kernels/channel_reduce.h"

namespace ql {
namespace {

int64_t version_of(const at::Tensor& w) { return w.is_inference() ? -1 : static_cast<int64_t>(w._version()); }

}  // namespace

SharedWeightAmax::SharedWeightAmax(std::vector<const QuantizableLayer*> members) : members_(std::move(members)) {}

float SharedWeightAmax::value() const {
    std::lock_guard<std::mutex> lock(mutex_);
    bool same = valid_ && data_.size() == members_.size();
    for (size_t i = 0; same && i < members_.size(); ++i)
        same = data_[i] == members_[i]->weight.data_ptr() && versions_[i] == version_of(members_[i]->weight);
    if (same) return amax_;
    float amax = 0;
    data_.clear();
    versions_.clear();
    for (const QuantizableLayer* m : members_) {
        at::NoGradGuard no_grad;
        const at::Tensor w = m->weight.detach().to(at::kCPU, at::kFloat).contiguous();
        amax = std::max(amax, kernels::finite_absmax(w.data_ptr<float>(), w.numel()));
        data_.push_back(m->weight.data_ptr());
        versions_.push_back(version_of(m->weight));
    }
    amax_ = amax;
    valid_ = true;
    return amax_;
}

}  // namespace ql
