// SPDX-License-Identifier: GPL-3.0-or-later
// Output adapters of Linear layers: a function of a layer's raw input x (before its online
// rotation and input quantization) and its output y that gives the output the model uses.
// LoRA installs one per adapted layer (engine/lora/lora_adapters.h: y + dropout(x) A^T B^T
// alpha / r); LinearLayer::forward applies it after the base's product. Kept in a table beside
// the layers, keyed by the layer, rather than as a member of QuantizableLayer, so that the layer
// type (which every model and most of the engine include) stays as it is; the forward of a
// model without adapters pays one relaxed atomic load per Linear layer.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace ql {

struct LinearLayer;

using LinearOutputAdapter = std::function<at::Tensor(const at::Tensor& x, const at::Tensor& y)>;

// Installs (or, with an empty function, removes) `layer`'s adapter. The caller keeps the layer
// alive while installed and removes the adapter before the layer goes. Thread-safe.
void set_linear_output_adapter(const LinearLayer& layer, LinearOutputAdapter adapter);
bool has_linear_output_adapter(const LinearLayer& layer);

// y, or the layer's adapter applied to (x, y).
at::Tensor apply_linear_output_adapter(const LinearLayer& layer, const at::Tensor& x, const at::Tensor& y);

}  // namespace ql
