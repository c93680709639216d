// SPDX-License-Identifier: GPL-3.0-or-later
// Whether a quantized model's function is plain per-layer weights -- what a standard checkpoint
// layout (Model Optimizer's HF layout, compressed-tensors, GGUF) can hold: each Linear computes
// Q(x) Q(W)^T + b from its own input and weight, and the KV cache (if quantized) keeps K and V
// as the attention computes them. Fused rotations (R1, R2: rotation.h) leave plain weights;
// online rotations do not: a Linear with an input rotation (R4 down_proj, rht) needs the runtime
// Hadamard transform of its input, and a Q/K rotation (R3, kv_cache.rotate) one of Q and K.
// For exporters (the hf-modelopt and compressed-tensors exports call it before packing).
#pragma once

#include <string>

#include "engine/quant/quantized_model.h"

namespace ql {

// "" when q is plain weights; else why not, naming the first layer or attention that needs a
// runtime transform (e.g. "model.layers.0.mlp.down_proj has an online Hadamard rotation of its
// input (rotation down_proj / rht)").
std::string plain_weights_refusal(const QuantizedModel& q);

}  // namespace ql
