// SPDX-License-Identifier: GPL-3.0-or-later
// The layers quantization works on, each addressed by its HF module name
// ("model.layers.3.mlp.down_proj"), so recipes, statistics and exports find layers by name.
// Linear, Conv2d and Embedding share one base: a weight (+ bias) and two hooks that
// quantization (issues 4/5) sets. Every model lists them in forward order
// (Model::quantizable_layers()).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

namespace ql {

// A differentiable tensor -> tensor map (fake quantization with a straight-through estimator
// for training). Empty = identity.
using TensorHook = std::function<at::Tensor(const at::Tensor&)>;

enum class LayerKind { Linear, Conv2d, Embedding };
const char* layer_kind_name(LayerKind kind);  // "linear", "conv2d", "embedding"

struct QuantizableLayer {
    virtual ~QuantizableLayer() = default;
    virtual LayerKind kind() const = 0;

    std::string name;  // HF module name, without ".weight"
    // Layout per kind (below). float32, or as the checkpoint stores it (BF16 / F16, possibly a
    // read-only file mapping: Model::make_weight_float32 before writing; docs/MODELS.md
    // "Weights as stored"). compute_weight() is what the forward multiplies with.
    at::Tensor weight;
    at::Tensor bias;   // [out] float32 or undefined
    TensorHook weight_quantizer;  // applied to `weight` in every forward
    TensorHook input_quantizer;   // applied to the float input (Linear, Conv2d; Embedding: unused)
    // An online rotation of the input (Linear only), applied before input_quantizer and part of
    // the model's function: engine/quant/rotation.h sets it together with the matching rotation
    // of `weight` (x H (W H)^T = x W^T), and it stays when the quantizers are removed.
    TensorHook input_rotation;

    // weight_quantizer(weight) computed once and kept while neither changes (inference: text
    // generation, evaluation), so that a forward does not quantize the weight again
    // (FrozenEffectiveWeights sets and clears it). Undefined otherwise.
    at::Tensor frozen_weight;
    // The weight as forward uses it: frozen_weight when set, else weight_quantizer(weight), or
    // weight when unset; in its own dtype (a BF16 weight without a quantizer stays BF16).
    at::Tensor effective_weight() const;
    // effective_weight() in `dtype` (the input's: float32): a stored BF16 / F16 weight is
    // converted for this one use (exactly: every BF16 / F16 value is a float32 value).
    at::Tensor compute_weight(at::ScalarType dtype) const;
    // input_quantizer(input_rotation(x)), each when set.
    at::Tensor quantize_input(const at::Tensor& x) const;
};

// y = quantize_input(x) @ effective_weight()^T + bias; x [..., in] -> [..., out].
// weight [out, in]. GPT-2's Conv1D modules keep their weights as [in, out] in checkpoints: they
// are transposed to [out, in] on load (one contiguous copy), so every Linear here is [out, in];
// `file_layout_in_out` says to transpose back when writing an HF file (Model::file_state()).
struct LinearLayer : QuantizableLayer {
    LayerKind kind() const override { return LayerKind::Linear; }
    bool file_layout_in_out = false;
    at::Tensor forward(const at::Tensor& x) const;
    // The weight as the HF checkpoint stores it ([in, out] for GPT-2 Conv1D, else [out, in]).
    at::Tensor file_weight() const;
};

// PyTorch Conv2d: x [B, in, H, W] -> [B, out, H', W']; weight [out, in / groups, kh, kw].
struct Conv2dLayer : QuantizableLayer {
    LayerKind kind() const override { return LayerKind::Conv2d; }
    int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
    at::Tensor forward(const at::Tensor& x) const;
};

// Token / position lookup: ids [...] int64 -> [..., dim]; weight [num_embeddings, dim].
struct EmbeddingLayer : QuantizableLayer {
    LayerKind kind() const override { return LayerKind::Embedding; }
    at::Tensor forward(const at::Tensor& ids) const;
};

}  // namespace ql
