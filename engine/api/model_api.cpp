// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/model_api.h"

#include <c10/core/ScalarType.h>

#include "engine/core/model_source.h"

namespace ql {
namespace {

std::string dtype_text(const at::Tensor& t) {
    switch (t.scalar_type()) {
        case at::kFloat: return "float32";
        case at::kHalf: return "float16";
        case at::kBFloat16: return "bfloat16";
        case at::kDouble: return "float64";
        default: return c10::toString(t.scalar_type());
    }
}

}  // namespace

ModelSummary inspect_model(const std::string& model) {
    OpenedModel m = open_model(model);
    ModelSummary s;
    s.path = m.path;
    s.is_demo = m.is_demo;
    s.config = m.model->config();
    s.parameter_count = m.model->parameter_count();
    for (const auto& [name, t] : m.model->named_parameters()) {
        ParameterSummary p;
        p.name = name;
        p.shape.assign(t.sizes().begin(), t.sizes().end());
        p.dtype = dtype_text(t);
        p.numel = t.numel();
        s.parameter_bytes += t.numel() * static_cast<int64_t>(t.element_size());
        s.parameters.push_back(std::move(p));
    }
    for (const QuantizableLayer* l : m.model->quantizable_layers()) {
        LayerSummary ls;
        ls.name = l->name;
        ls.kind = layer_kind_name(l->kind());
        ls.weight_shape.assign(l->weight.sizes().begin(), l->weight.sizes().end());
        ls.has_bias = l->bias.defined();
        ls.parameters = l->weight.numel() + (l->bias.defined() ? l->bias.numel() : 0);
        s.layers.push_back(std::move(ls));
    }
    return s;
}

}  // namespace ql
