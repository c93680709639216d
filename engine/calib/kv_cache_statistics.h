// SPDX-License-Identifier: GPL-3.0-or-later
// What calibration records about the keys and values of every quantized KV cache: the amax per
// KV head (max calibration, as Model Optimizer's KV quantizers use) and an evenly spread sample
// of cached token rows [n, Hkv, head_dim] for the error report, the statistics and the what-if
// view. KvCacheObservers installs one observer per KvCacheQuantizer and removes them when
// destroyed; non-finite keys or values stop calibration with a UserError naming the attention.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/quant/quantized_model.h"

namespace ql {

class KvCacheStatistics {
public:
    KvCacheStatistics(int64_t kv_heads, int64_t sample_rows, int64_t expected_rows);

    void add(const at::Tensor& k, const at::Tensor& v);  // [B, Hkv, T, D] each

    const std::vector<float>& key_head_amax() const { return key_amax_; }    // [Hkv]
    const std::vector<float>& value_head_amax() const { return value_amax_; }
    // The amax a quantizer of `count` scales takes: {max over heads} or the per-head values.
    std::vector<float> key_amax(int64_t count) const;
    std::vector<float> value_amax(int64_t count) const;
    at::Tensor key_samples() const;    // [n, Hkv, D] float32 (undefined when none)
    at::Tensor value_samples() const;
    int64_t tokens() const { return tokens_; }

private:
    int64_t heads_, sample_rows_, expected_rows_;
    std::vector<float> key_amax_, value_amax_;
    std::vector<at::Tensor> key_parts_, value_parts_;
    int64_t sampled_ = 0, tokens_ = 0;
};

class KvCacheObservers {
public:
    // Observes every KV-cache quantizer of q (configured or rotation-only) while `data` runs.
    KvCacheObservers(QuantizedModel& q, int64_t sample_rows, const Dataset& data);
    ~KvCacheObservers();
    KvCacheObservers(const KvCacheObservers&) = delete;
    KvCacheObservers& operator=(const KvCacheObservers&) = delete;

    KvCacheStatistics& at(const std::string& attention) { return stats_.at(attention); }
    bool has(const std::string& attention) const { return stats_.count(attention) > 0; }

private:
    QuantizedModel& quantized_;
    std::map<std::string, KvCacheStatistics> stats_;
};

}  // namespace ql
