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
#include "engine/quant/kv_cache_quantizer.h"
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

// Storage of a decoder's KV cache per token of context: K and V of every attention layer, at the
// recipe's KV format (KvCacheSettings::bits_per_element) or 16 bits where the cache is not
// quantized. Zero for models without a KV cache.
struct KvCacheMemory {
    int64_t layers = 0;                // attention layers
    int64_t kv_heads = 0, head_dim = 0;
    double bits_per_token = 0;         // as the recipe stores it, scales included
    double fp16_bits_per_token = 0;    // the same cache in BF16 / FP16
    double bytes_per_token() const { return bits_per_token / 8.0; }
    double bytes_for(int64_t tokens) const { return bytes_per_token() * static_cast<double>(tokens); }
};


class QuantizedModel {
public:
    // Plans (throws UserError before touching the model) and installs the quantizers, all off:
    // a LayerQuantizer per Linear / Conv2d layer, and a KvCacheQuantizer per attention site when
    // the recipe quantizes the KV cache or rotates Q/K (UserError for a model without a KV cache).
    // Rotations of the weights are rotate_model's (rotation.h), done by PTQ.
    QuantizedModel(Model& model, Recipe recipe);
    ~QuantizedModel();

    Model& model() const { return model_; }
    const Recipe& recipe() const { return recipe_; }
    const std::vector<std::unique_ptr<LayerQuantizer>>& layers() const { return layers_; }
    LayerQuantizer* find(const std::string& layer_name) const;  // nullptr when absent
    const std::vector<std::unique_ptr<KvCacheQuantizer>>& kv_caches() const { return kv_; }
    KvCacheQuantizer* find_kv_cache(const std::string& attention_name) const;  // nullptr when absent

    // Every configured quantizer on (or off), KV-cache quantizers included.
    void set_enabled(bool on);

    // With the recipe's share_fused_scales: the fused groups (fused_layers.h) whose members share
    // one weight amax (installed by the constructor) -- members with the same weight format and a
    // per-tensor scale (NVFP4, FP8 / symmetric INT per tensor).
    const std::vector<std::vector<std::string>>& shared_weight_groups() const { return shared_weight_groups_; }
    // With share_fused_scales: every fused group's static input quantizers (same format) get the
    // largest calibrated amax of the group. Called after calibration (PTQ); a no-op otherwise.
    void share_fused_input_amax();

    // The calibrated KV-cache scales as the exports write them (k_scale / v_scale per attention):
    // from the KV-cache quantizers with static per-tensor FP8 or NVFP4 scales; nullopt otherwise.
    std::optional<KvCacheScales> kv_cache_scales() const;
    void set_kv_cache_enabled(bool on);
    ModelSize size() const;
    KvCacheMemory kv_cache_memory() const;

    // Whether the recipe's rotation is in the model (rotate_model ran, or the checkpoint it was
    // loaded from was written rotated), and what it did.
    bool rotated() const { return rotated_; }
    const std::vector<std::string>& rotation_notes() const { return rotation_notes_; }
    void mark_rotated(std::vector<std::string> notes) {
        rotated_ = true;
        rotation_notes_ = std::move(notes);
    }

private:
    Model& model_;
    Recipe recipe_;
    std::vector<std::unique_ptr<LayerQuantizer>> layers_;
    std::vector<std::vector<std::string>> shared_weight_groups_;
    std::vector<std::unique_ptr<KvCacheQuantizer>> kv_;
    bool rotated_ = false;
    std::vector<std::string> rotation_notes_;
};

}  // namespace ql
