// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") installed
// beside a model's Linear layers as their output adapters (engine/models/linear_output_adapter.h).
// For a layer with weight W [out, in], whatever base it has (full precision, or a frozen
// quantized base: QLoRA, Dettmers et al. 2023):
//   y = base(x) + dropout(x) A^T B^T * (alpha / r),   A [r, in], B [out, r]
// exactly PEFT's lora.Linear forward (peft/tuners/lora/layer.py: result + lora_B(lora_A(
// dropout(x))) * scaling; bnb.py Linear4bit likewise on its 4-bit base). x is the layer's raw
// input: an input quantizer or an online rotation of the base applies to the base alone.
// Parameters are float32 on the model's device (bf16 storage: rounded to bfloat16 values after
// every optimizer step, round_to_storage()). Destroying this object removes the hooks.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/lora/lora_settings.h"
#include "engine/models/model.h"

namespace ql {

struct LoraLayer {
    LinearLayer* layer = nullptr;  // owned by the model
    std::string module;            // its HF module name
    at::Tensor A;                  // lora_A.weight [r, in] float32
    at::Tensor B;                  // lora_B.weight [out, r] float32
};

class LoraAdapters {
public:
    // Adapters for every layer `settings` targets (resolve_lora_targets), initialised as PEFT's
    // default: A ~ U(-1/sqrt(in), 1/sqrt(in)) (nn.init.kaiming_uniform_(a = sqrt(5))), drawn from
    // a generator seeded by (settings.seed, layer index); B = 0, so the model is unchanged.
    LoraAdapters(Model& model, LoraSettings settings);
    ~LoraAdapters();
    LoraAdapters(const LoraAdapters&) = delete;
    LoraAdapters& operator=(const LoraAdapters&) = delete;

    const LoraSettings& settings() const { return settings_; }
    double scaling() const { return settings_.scaling(); }
    std::vector<LoraLayer>& layers() { return layers_; }
    const std::vector<LoraLayer>& layers() const { return layers_; }
    const LoraLayer* find(const std::string& module) const;

    // PEFT's state-dict names: "base_model.model.<module>.lora_A.weight" / ".lora_B.weight", in
    // forward order, A before B. The tensors are the adapters' own.
    std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;
    int64_t parameter_count() const;

    // Training: dropout on (when the settings have it). The mask of a forward is a pure function of
    // (seed, micro-batch index, layer), so a resumed run draws the masks the uninterrupted one
    // drew: set_micro_batch(k) before the forward of micro-batch k.
    void set_training(bool on) { training_ = on; }
    void set_micro_batch(int64_t index) { micro_batch_ = index; }
    // Off: the layers compute their base alone (the hooks stay installed).
    void set_enabled(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }

    // bf16 storage: every A and B rounded to the nearest bfloat16 value (no-op for fp32).
    void round_to_storage();
    // The layer's update as a weight: (alpha / r) B A [out, in] float32 (what merging adds).
    at::Tensor delta(const LoraLayer& l) const;
    // Replaces A and B (shapes checked; UserError naming `source` and the tensor).
    void load(const std::vector<std::pair<std::string, at::Tensor>>& tensors, const std::string& source);

private:
    at::Tensor forward(size_t index, const at::Tensor& x, const at::Tensor& y) const;
    Model& model_;
    LoraSettings settings_;
    std::vector<LoraLayer> layers_;
    bool training_ = false, enabled_ = true;
    int64_t micro_batch_ = 0;
};

// "base_model.model.<module>.lora_A.weight" (which = "A" or "B").
std::string peft_tensor_name(const std::string& module, const char* which);

}  // namespace ql
