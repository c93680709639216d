// SPDX-License-Identifier: GPL-3.0-or-later
// A model: its config, its parameters under HF names, and a forward pass built from ATen
// operators (so autograd works for QAT/QAD without the LibTorch C++ frontend's heavy headers).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/models/linear_layer.h"
#include "engine/models/model_config.h"

namespace ql {

class Model {
public:
    virtual ~Model() = default;

    const ModelConfig& config() const { return config_; }

    // Decoders: input_ids [B, T] int64 -> logits [B, T, vocab] float32 (causal, full sequence,
    // no KV cache). BERT: -> last hidden state [B, T, hidden] (use mean_pool for embeddings).
    // MLP / CNN: inputs [B, features] / [B, C, H, W] float32 -> logits [B, classes].
    virtual at::Tensor forward(const at::Tensor& inputs) = 0;

    // Every parameter under its HF state-dict name ("model.layers.0.self_attn.q_proj.weight"),
    // as the model uses it (Conv1D weights already transposed to [out, in]).
    virtual std::vector<std::pair<std::string, at::Tensor>> named_parameters() = 0;

    // The quantizable Linear layers, by HF module name, in forward order.
    virtual std::vector<LinearLayer*> linear_layers() = 0;

    // Parameter count (tied weights once).
    int64_t parameter_count();

protected:
    explicit Model(ModelConfig config) : config_(std::move(config)) {}
    ModelConfig config_;
};

// A model with random weights (seeded, deterministic), e.g. for the built-in models.
std::unique_ptr<Model> create_model(const ModelConfig& config, uint64_t seed);

// An HF model folder: config.json + model.safetensors (or a sharded index). Missing or extra
// tensors and shape mismatches are UserErrors naming the file and tensor.
std::unique_ptr<Model> load_hf_model(const std::string& folder);

// Replaces parameters from a name -> tensor map (HF names and file layouts, e.g. GPT-2 Conv1D
// [in, out]); every parameter must be present with the right shape; tied weights may be absent.
void load_state(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source_name);

// BERT sentence embeddings: mean of hidden states over non-padding tokens.
at::Tensor mean_pool(const at::Tensor& hidden, const at::Tensor& attention_mask);

}  // namespace ql
