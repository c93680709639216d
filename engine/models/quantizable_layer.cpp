// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/quantizable_layer.h"

#include <ATen/ops/conv2d.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/linear.h>
#include <c10/core/ScalarType.h>

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

at::Tensor QuantizableLayer::compute_weight(at::ScalarType dtype) const {
    const at::Tensor w = effective_weight();
    return w.scalar_type() == dtype ? w : w.to(dtype);
}

at::Tensor QuantizableLayer::quantize_input(const at::Tensor& x) const {
    const at::Tensor rotated = input_rotation ? input_rotation(x) : x;
    return input_quantizer ? input_quantizer(rotated) : rotated;
}

at::Tensor LinearLayer::forward(const at::Tensor& x) const {
    const at::Tensor in = quantize_input(x);
    return at::linear(in, compute_weight(in.scalar_type()), bias);
}

at::Tensor LinearLayer::file_weight() const {
    return file_layout_in_out ? weight.t().contiguous() : weight;
}

at::Tensor Conv2dLayer::forward(const at::Tensor& x) const {
    const at::Tensor in = quantize_input(x);
    return at::conv2d(in, compute_weight(in.scalar_type()), bias, {stride, stride}, {padding, padding},
                      {dilation, dilation}, groups);
}

at::Tensor EmbeddingLayer::forward(const at::Tensor& ids) const {
    // Rows of a stored BF16 / F16 table are gathered first and converted after: the models
    // compute in float32.
    const at::Tensor rows = at::embedding(effective_weight(), ids);
    return rows.scalar_type() == at::kFloat || !at::isFloatingType(rows.scalar_type()) ? rows : rows.to(at::kFloat);
}

}  // namespace ql
