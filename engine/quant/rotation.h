// SPDX-License-Identifier: GPL-3.0-or-later
// The rotations of a recipe's `rotation` section (rotation_settings.h, docs/RECIPES.md
// "Rotation") applied to a model whose quantizers are installed. Every rotation is orthogonal
// and leaves the full-precision function unchanged (up to float rounding; tested to 1e-5):
//
//   R1 residual (hadamard; Llama family and Qwen2): Q1 = diag(s1) H, H block-diagonal over the
//      hidden size (kernels/hadamard.h), s1 random signs. Every RMSNorm weight is first folded
//      into the Linears that read it (W <- W diag(w), w <- 1: RMSNorm(x Q1) = RMSNorm(x) Q1 only
//      without a per-channel weight); then E <- E Q1 (embedding), W <- W Q1 for the readers of
//      the residual stream (q/k/v, gate/up, lm_head), W <- Q1^T W and b <- b Q1 for its writers
//      (o_proj, down_proj). QuaRot (Ashkboos et al. 2024) section 4, SpinQuant (Liu et al. 2024) R1.
//   R2 attention head (hadamard; Llama, Qwen2, GPT-2, BERT): Q2 = diag(s2) H over head_dim per
//      KV head, fused into the value projection's rows (V <- V Q2 per head) and the output
//      projection's columns of every query head that reads it (SpinQuant R2).
//   R4 down_proj (hadamard): an online Hadamard of the MLP's down projection's input (Llama
//      mlp.down_proj, GPT-2 mlp.c_proj, BERT output.dense): x <- x H at run time
//      (QuantizableLayer::input_rotation, through the fast kernel), W <- W H once (QuaRot R4).
//   rht (Model Optimizer's rotate-before-quantize): the same online rotation, with the
//      normalized Hadamard in blocks of rotation.block_size (or Model Optimizer's default) on
//      every Linear that has a quantizer.
//   R3 qk (both methods): an online Hadamard of Q and K over head_dim, done by the KV cache's
//      attention hook (kv_cache_quantizer.h), so that the cached K is rotated.
// Fused weights are computed in float64 and rounded once. Layers whose weight is tied to the
// embedding (a tied lm_head) are not rotated online (it would rotate the embedding too).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/quant/hadamard_transform.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct RotationReport {
    std::vector<std::string> applied;  // one line per rotation done, e.g. "R1 residual stream ..."
    std::vector<std::string> skipped;  // what the architecture does not allow, and why
    int64_t online_layers = 0;         // Linear layers with an input rotation
};

// Applies the recipe's rotation to q's model: fused parts into the weights, online parts as
// input_rotation (with the weight rotated along its inputs). UserError, before any change, when
// a part the recipe asks for explicitly (true) does not apply to the model, or when a block size
// does not fit a layer. No-op for a recipe without rotation.
RotationReport rotate_model(QuantizedModel& q);

// The online input rotations the recipe gives q's layers, with their blocks (for
// install_online_rotations, exports and the what-if view).
std::vector<std::pair<QuantizableLayer*, HadamardRotation>> online_rotations(const QuantizedModel& q);

// For a model whose weights were rotated when it was saved (a quantized checkpoint): installs
// the online input rotations only.
void install_online_rotations(const QuantizedModel& q);

// What a Linear computes from an input x after rotation, as plain weights: W_eff = W H^T, so that
// x W_eff^T = (x H) W^T. `weight` [out, in] as the layer holds it (the rotated weight or its
// quantized value). Exports fold online rotations with it.
at::Tensor fold_input_rotation(const at::Tensor& weight, const HadamardRotation& rotation);

}  // namespace ql
