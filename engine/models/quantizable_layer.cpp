// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/quantizable_layer.h"

#include "engine/models/linear_output_adapter.h"

#include <ATen/ops/conv2d.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/linear.h>

namespace ql {

const char* layer_kind_name(LayerKind kind) {
    switch (kind) {
        case LayerKind::Linear: return "linear";
        case LayerKind::Conv2d: return "conv2d";
        case LayerKind::Embedding: return "embedding";
    }
    return "?";
}

at::Tensor QuantizableLayer::effective_weight() const {
    if (frozen_weight.defined()) return frozen_weight;
    return weight_quantizer ? weight_quantizer(weight) : weight;
}

at::Tensor QuantizableLayer::quantize_input(const at::Tensor& x) const {
    const at::Tensor rotated = input_rotation ? input_rotation(x) : x;
    return input_quantizer ? input_quantizer(rotated) : rotated;
}

at::Tensor LinearLayer::forward(const at::Tensor& x) const {
    // A LoRA adapter (linear_output_adapter.h) adds its update to the base's product.
    return apply_linear_output_adapter(*this, x, at::linear(quantize_input(x), effective_weight(), bias));
}

at::Tensor LinearLayer::file_weight() const {
    return file_layout_in_out ? weight.t().contiguous() : weight;
}

at::Tensor Conv2dLayer::forward(const at::Tensor& x) const {
    return at::conv2d(quantize_input(x), effective_weight(), bias, {stride, stride}, {padding, padding},
                      {dilation, dilation}, groups);
}

at::Tensor EmbeddingLayer::forward(const at::Tensor& ids) const {
    return at::embedding(effective_weight(), ids);
}

}  // namespace ql
