// SPDX-License-Identifier: GPL-3.0-or-later
// A model with a recipe's quantizers installed: one LayerQuantizer per Linear / Conv2d layer
// (configured or not, so any layer can be inspected), created from a validated plan. The model
// must outlive this object; destroying it removes the quantizers (the model is FP again, except
// for weights an algorithm changed in place).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "engine/models/model.h"
#include "engine/quant/kv_cache_scales.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/recipe.h"

namespace ql {

// Storage of a model as deployed: quantized weights with their scales and zero points, other
// parameters at 16 bits (BF16).
struct ModelSize {
    int64_t parameters = 0;
    int64_t quantized_parameters = 0;  // elements of quantized weights
    double bits = 0;                   // all parameters, scales included
    double quantized_bits = 0;         // quantized weights, scales included
    double bits_per_parameter() const { return parameters ? bits / static_cast<double>(parameters) : 0; }
    double bytes() const { return bits / 8.0; }
};

// Bits a weight of `shape` ([out, in]) takes in `spec`, scales and zero points included:
// element bits per element; FP8 / INT per-tensor and per-channel scales and INT group scales as
// F32 (the Model Optimizer export layouts), asymmetric zero points at the element width; NVFP4
// one E4M3 per 16 plus one F32; MX one E8M0 per 32; NF4 one F32 absmax per 64 (double
// quantization: one byte per 64 plus one F32 per 256 blocks and the offset); GGUF block bytes.
double weight_storage_bits(const QuantSpec& spec, const std::vector<int64_t>& shape);

class QuantizedModel {
public:
    // Plans (throws UserError before touching the model) and installs the quantizers, all off.
    QuantizedModel(Model& model, Recipe recipe);

    Model& model() const { return model_; }
    const Recipe& recipe() const { return recipe_; }
    const std::vector<std::unique_ptr<LayerQuantizer>>& layers() const { return layers_; }
    LayerQuantizer* find(const std::string& layer_name) const;  // nullptr when absent

    // Every configured quantizer on (or off).
    void set_enabled(bool on);

    // With the recipe's share_fused_scales: the fused groups (fused_layers.h) whose members share
    // one weight amax (installed by the constructor) -- members with the same weight format and a
    // per-tensor scale (NVFP4, FP8 / symmetric INT per tensor).
    const std::vector<std::vector<std::string>>& shared_weight_groups() const { return shared_weight_groups_; }
    // With share_fused_scales: every fused group's static input quantizers (same format) get the
    // largest calibrated amax of the group. Called after calibration (PTQ); a no-op otherwise.
    void share_fused_input_amax();

    // Calibrated KV-cache scales (recipes with "kv_cache"; PTQ sets them, checkpoints keep them):
    // what the exports write as k_scale / v_scale.
    const std::optional<KvCacheScales>& kv_cache_scales() const { return kv_cache_scales_; }
    void set_kv_cache_scales(std::optional<KvCacheScales> s) { kv_cache_scales_ = std::move(s); }
    ModelSize size() const;

private:
    Model& model_;
    Recipe recipe_;
    std::vector<std::unique_ptr<LayerQuantizer>> layers_;
    std::vector<std::vector<std::string>> shared_weight_groups_;
    std::optional<KvCacheScales> kv_cache_scales_;
};

}  // namespace ql
