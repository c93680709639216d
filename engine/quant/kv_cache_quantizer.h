// SPDX-License-Identifier: GPL-3.0-or-later
// The KV-cache quantizer of one attention (Model Optimizer's k_bmm_quantizer / v_bmm_quantizer,
// shared/design/EXPORT_LAYOUTS_2.md section 3): installed into the model's AttentionSite hook, it
// fake-quantizes the keys after RoPE and the values as they enter attention, so that every
// forward pass (evaluation, calibration, QAT / QAD) sees the cache as deployed. Optionally it
// first rotates Q and K by the Hadamard transform over head_dim (R3; Model Optimizer's
// nvfp4_rotate), which leaves the attention scores unchanged.
//
// Numerics (k [B, Hkv, T, D]; the same for v):
//   static amax (granularity tensor / head, calibrated by max, or 448 with use_constant_amax):
//     FP8:   k^ = s e4m3_RNE_sat(k / s), s = amax / 448 (one s per layer, or per KV head);
//     INT b: k^ = s clamp(round_half_even(k / s)), s = amax / (2^(b-1) - 1), symmetric;
//     NVFP4: E4M3 block scales per 16 along D, dynamic per token; global g = amax / (6 * 448).
//   group (INT): dynamic symmetric scales per group of group_size along D, per token.
// These are the engine's fake-quantization kernels with a fixed amax (engine/formats); what a
// KV-cache layout stores as k_scale / v_scale is kv_scale() (Model Optimizer: amax / 448 for FP8
// and NVFP4 alike). Training: straight-through gradients (engine/quant/straight_through.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/formats/format_codec.h"
#include "engine/models/attention_site.h"
#include "engine/quant/hadamard_transform.h"
#include "engine/quant/kv_cache_settings.h"

namespace ql {

class KvCacheQuantizer {
public:
    // Installs the site's hook; the site must outlive this object, which removes the hook.
    // `settings.enabled` false gives a rotation-only hook (rotate_qk). UserError naming the site
    // when the format does not fit head_dim (e.g. a group size that does not divide it).
    KvCacheQuantizer(AttentionSite& site, const KvCacheSettings& settings, bool rotate_qk);
    ~KvCacheQuantizer();
    KvCacheQuantizer(const KvCacheQuantizer&) = delete;
    KvCacheQuantizer& operator=(const KvCacheQuantizer&) = delete;

    const std::string& name() const { return site_.name; }
    const AttentionSite& site() const { return site_; }
    const KvCacheSettings& settings() const { return settings_; }
    bool configured() const { return settings_.enabled; }
    bool rotates_qk() const { return rotation_.active(); }
    const HadamardRotation& qk_rotation() const { return rotation_; }

    // Run-time switch of the K / V fake quantization (the rotation, part of the function, stays).
    void set_enabled(bool on) { enabled_ = on && configured(); }
    bool enabled() const { return enabled_; }

    // Static scales need a calibrated amax: tensor or head granularity without use_constant_amax.
    bool needs_amax() const;
    // Number of amax values: 1 (tensor), num_kv_heads (head); 0 for dynamic group scales.
    int64_t amax_count() const;
    // Calibrated amax of K and V (empty until calibrated; {448} with use_constant_amax).
    const std::vector<float>& key_amax() const { return key_amax_; }
    const std::vector<float>& value_amax() const { return value_amax_; }
    // UserError unless both have amax_count() finite non-negative values.
    void set_amax(std::vector<float> key, std::vector<float> value);
    // What a KV-cache checkpoint stores per layer (k_scale / v_scale): amax / 448 for FP8 and
    // NVFP4 (Model Optimizer quant_utils.py, vLLM), amax / (2^(b-1) - 1) for INT. Empty when the
    // scales are dynamic or not calibrated.
    std::vector<float> key_scale() const { return kv_scale(key_amax_); }
    std::vector<float> value_scale() const { return kv_scale(value_amax_); }

    // Sees K (after rotation) and V before quantization, every forward: calibration statistics.
    using Observer = std::function<void(const at::Tensor& k, const at::Tensor& v)>;
    void set_observer(Observer observer) { observer_ = std::move(observer); }

    // The fake quantization of a K / V tensor [B, Hkv, T, D] (or [rows, Hkv, D]: heads in dim 1,
    // head_dim last), as the hook does it when enabled; differentiable (STE) when autograd records.
    at::Tensor quantize_key(const at::Tensor& k) const { return quantize(k, key_amax_, "K"); }
    at::Tensor quantize_value(const at::Tensor& v) const { return quantize(v, value_amax_, "V"); }
    // The spec the cached elements use (fixed_amax unset): for the format grid of statistics.
    const QuantSpec& spec() const { return spec_; }

private:
    void forward(at::Tensor& q, at::Tensor& k, at::Tensor& v) const;
    at::Tensor quantize(const at::Tensor& x, const std::vector<float>& amax, const char* which) const;
    std::vector<float> kv_scale(const std::vector<float>& amax) const;

    AttentionSite& site_;
    KvCacheSettings settings_;
    HadamardRotation rotation_;
    QuantSpec spec_;
    bool enabled_ = false;
    std::vector<float> key_amax_, value_amax_;
    Observer observer_;
};

}  // namespace ql
