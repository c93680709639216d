// SPDX-License-Identifier: GPL-3.0-or-later
// Rotations as a recipe's `rotation` section says them (docs/RECIPES.md "Rotation"): orthogonal
// Hadamard transforms that leave the full-precision model's function unchanged but spread
// outliers before quantization (engine/quant/rotation.h does them). Plain C++ (facade-safe).
//   hadamard  QuaRot / SpinQuant style: R1 = a randomized Hadamard of the residual stream fused
//             into the weights (RMSNorm weights folded into the following Linears first), R2 =
//             a randomized Hadamard per attention head fused into V and O, R4 = an online
//             Hadamard of the input of down_proj (its weight rotated to match).
//   rht       Model Optimizer's rotate-before-quantize (quantizer cfg `rotate: true`,
//             modelopt/torch/quantization/nn/functional.py normalized_hadamard_transform): the
//             input and the weight of every quantized Linear rotated by the normalized Hadamard
//             transform along the input features, in blocks of block_size (no random signs).
// Both may add R3 (qk): an online Hadamard of Q and K over head_dim for the KV cache.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ql {

struct RotationSettings {
    std::string method;                  // "" (none) | hadamard | rht
    // hadamard only; unset = wherever the architecture allows (R1: RMSNorm decoders whose
    // lm_head is not tied to the embedding; R2: every attention; R4: every MLP's down projection).
    std::optional<bool> residual;        // R1
    std::optional<bool> attention_head;  // R2
    std::optional<bool> down_proj;       // R4
    bool qk = false;                     // R3
    // rht: 0 = Model Optimizer's default per layer (the input features when a power of two, else
    // their largest power-of-two divisor). hadamard: must stay 0 (each rotation takes its own).
    int64_t block_size = 0;
    uint64_t seed = 0;                   // hadamard: the random signs of R1 and R2

    bool enabled() const { return !method.empty(); }
    std::string describe() const;        // "hadamard (R1 R2 R4)", "rht block 16", "off"
};

// --rotate names: hadamard, rht, none.
RotationSettings rotation_preset(const std::string& name);

}  // namespace ql
