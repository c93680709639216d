// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/quantizable_layer.h"

#include "engine/models/linear_output_adapter.h"
#include "engine/models/matrix_products.h"

#include <ATen/ops/conv2d.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mv.h>
#include <c10/core/ScalarType.h>

#include <vector>

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
    // The weight in the input's dtype (a BF16 checkpoint kept as stored computes in FP32 here).
    const at::Tensor w = compute_weight(in.scalar_type());
    // One row (a decode step of text generation): a matrix-vector product. OpenBLAS 0.3.21's sgemm
    // packs the whole weight matrix even for a single row (36 % of a decode step of SmolLM2, perf);
    // sgemv reads it once. Later OpenBLAS versions forward such calls to gemv themselves.
    at::Tensor base;
    if (in.dim() >= 1 && in.numel() == in.size(-1) && in.device().is_cpu()) {
        at::Tensor y = at::mv(w, in.reshape({-1}));
        if (bias.defined()) y = y.add(bias);
        std::vector<int64_t> shape = in.sizes().vec();
        shape.back() = w.size(0);
        base = y.reshape(shape);
    } else {
        base = linear_product(in, w, bias);
    }
    // A LoRA adapter (linear_output_adapter.h) adds its update to the base's product.
    return apply_linear_output_adapter(*this, x, base);
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
