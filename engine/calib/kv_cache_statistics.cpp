// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/kv_cache_statistics.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"

namespace ql {
namespace {

// [B, H, T, D] -> [B * T, H, D]: one row per cached token.
at::Tensor token_rows(const at::Tensor& x) { return x.permute({0, 2, 1, 3}).reshape({-1, x.size(1), x.size(3)}); }

void update_amax(std::vector<float>& amax, const at::Tensor& x) {
    const at::Tensor m = x.abs().amax({0, 2, 3}).to(at::kCPU, at::kFloat).contiguous();
    const float* p = m.data_ptr<float>();
    for (size_t h = 0; h < amax.size(); ++h) amax[h] = std::max(amax[h], p[h]);
}

std::vector<float> reduce_to(const std::vector<float>& per_head, int64_t count) {
    if (count == static_cast<int64_t>(per_head.size())) return per_head;
    if (count == 1) return {*std::max_element(per_head.begin(), per_head.end())};
    return {};
}

}  // namespace

KvCacheStatistics::KvCacheStatistics(int64_t kv_heads, int64_t sample_rows, int64_t expected_rows)
    : heads_(kv_heads), sample_rows_(sample_rows), expected_rows_(expected_rows),
      key_amax_(static_cast<size_t>(kv_heads), 0.0f), value_amax_(static_cast<size_t>(kv_heads), 0.0f) {}

void KvCacheStatistics::add(const at::Tensor& k_in, const at::Tensor& v_in) {
    const at::Tensor k = k_in.detach().to(at::kFloat), v = v_in.detach().to(at::kFloat);
    if (k.numel() == 0) return;
    update_amax(key_amax_, k);
    update_amax(value_amax_, v);
    const at::Tensor kr = token_rows(k), vr = token_rows(v);
    const int64_t units = kr.size(0);
    if (sample_rows_ > 0 && sampled_ < sample_rows_) {
        // Every stride-th token of the whole pass, so the sample spans all batches.
        const int64_t stride = expected_rows_ > sample_rows_ ? expected_rows_ / sample_rows_ : 1;
        const int64_t first = (stride - tokens_ % stride) % stride;
        if (first < units) {
            const int64_t take = std::min<int64_t>((units - first + stride - 1) / stride, sample_rows_ - sampled_);
            key_parts_.push_back(kr.slice(0, first, units, stride).slice(0, 0, take).clone());
            value_parts_.push_back(vr.slice(0, first, units, stride).slice(0, 0, take).clone());
            sampled_ += take;
        }
    }
    tokens_ += units;
}

std::vector<float> KvCacheStatistics::key_amax(int64_t count) const { return reduce_to(key_amax_, count); }
std::vector<float> KvCacheStatistics::value_amax(int64_t count) const { return reduce_to(value_amax_, count); }

at::Tensor KvCacheStatistics::key_samples() const { return key_parts_.empty() ? at::Tensor() : at::cat(key_parts_, 0); }
at::Tensor KvCacheStatistics::value_samples() const { return value_parts_.empty() ? at::Tensor() : at::cat(value_parts_, 0); }

KvCacheObservers::KvCacheObservers(QuantizedModel& q, int64_t sample_rows, const Dataset& data) : quantized_(q) {
    const int64_t tokens = data.kind == Dataset::Kind::Images ? data.size() : data.inputs.numel();
    for (const auto& kv : q.kv_caches()) {
        KvCacheStatistics* s =
            &stats_.emplace(kv->name(), KvCacheStatistics(kv->site().num_kv_heads, sample_rows, tokens)).first->second;
        const std::string name = kv->name();
        kv->set_observer([s, name](const at::Tensor& k, const at::Tensor& v) {
            if (!at::isfinite(k).all().item<bool>() || !at::isfinite(v).all().item<bool>())
                throw UserError("calibration: the keys or values of " + name + " hold NaN or Inf");
            s->add(k, v);
        });
    }
}

KvCacheObservers::~KvCacheObservers() {
    for (const auto& kv : quantized_.kv_caches()) kv->set_observer(nullptr);
}

}  // namespace ql
