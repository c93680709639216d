// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/layer_quantizer.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <stdexcept>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/straight_through.h"

namespace ql {
namespace {

bool channels_last_input(const QuantizableLayer& layer, const QuantSpec& spec) {
    return layer.kind() == LayerKind::Conv2d && spec.block > 0;
}

// The weight's version counter (bumped by every in-place change); inference tensors (a model
// created under InferenceMode) have none, and only the storage identifies them.
int64_t version_of(const at::Tensor& w) { return w.is_inference() ? -1 : static_cast<int64_t>(w._version()); }

}  // namespace

LayerQuantizer::LayerQuantizer(LayerQuantPlan plan) : plan_(std::move(plan)) {
    weight_on_ = false;
    input_on_ = false;
    QuantizableLayer& l = *plan_.layer;
    l.weight_quantizer = [this](const at::Tensor& w) { return transform_weight(w); };
    l.input_quantizer = [this](const at::Tensor& x) { return transform_input(x); };
}

LayerQuantizer::~LayerQuantizer() {
    plan_.layer->weight_quantizer = nullptr;
    plan_.layer->input_quantizer = nullptr;
}

bool LayerQuantizer::input_needs_amax() const {
    if (!input_configured() || plan_.input.dynamic) return false;
    const std::string& fam = plan_.input_spec.info->family;
    if (fam == "nvfp4") return true;
    return (fam == "fp8" || fam == "int") && plan_.input_spec.granularity == Granularity::Tensor;
}

void LayerQuantizer::set_pre_quant_scale(const at::Tensor& s) {
    if (!s.defined()) {
        pre_quant_scale_ = at::Tensor();
        return;
    }
    if (s.dim() != 1 || s.size(0) != input_features(layer()))
        throw UserError("layer " + name() + ": pre_quant_scale must have one value per input feature (" +
                        std::to_string(input_features(layer())) + ")");
    pre_quant_scale_ = s.to(layer().weight.device(), at::kFloat).contiguous();  // where the inputs are
}

QuantSpec LayerQuantizer::input_spec_for_forward() const {
    QuantSpec spec = plan_.input_spec;
    if (input_needs_amax()) {
        if (std::isnan(input_amax_))
            throw UserError("layer " + name() + ": the static input quantizer has no calibrated amax (run calibration first)");
        spec.fixed_amax = input_amax_;
    }
    return spec;
}

at::Tensor LayerQuantizer::transform_input(const at::Tensor& x) const {
    at::Tensor v = x;
    if (pre_quant_scale_.defined()) {
        if (layer().kind() == LayerKind::Conv2d)
            v = v * pre_quant_scale_.view({1, -1, 1, 1});
        else
            v = v * pre_quant_scale_;
    }
    if (observer_) observer_(v);
    if (!input_on_) return v;
    const QuantSpec spec = input_spec_for_forward();
    const bool train = at::GradMode::is_enabled() && v.requires_grad();
    auto quantize = [&](const at::Tensor& t) {
        return train ? fake_quantize_ste(t, spec, SteOptions{clip_gradient_}) : fake_quantize(t, spec);
    };
    if (channels_last_input(layer(), spec)) {
        // Blocks of a Conv2d input run along channels, as for a Linear's input features.
        return quantize(v.permute({0, 2, 3, 1}).contiguous()).permute({0, 3, 1, 2}).contiguous();
    }
    // A [.., in] input is quantized as rows of `in`: blocks and groups along features.
    return quantize(v);
}

QuantSpec LayerQuantizer::weight_spec() const {
    QuantSpec s = plan_.weight_spec;
    if (shared_amax_) s.fixed_amax = shared_amax_->value();
    return s;
}

void LayerQuantizer::set_shared_weight_amax(std::shared_ptr<const SharedWeightAmax> shared) {
    shared_amax_ = std::move(shared);
    if (!pinned_) cached_ = at::Tensor();  // recomputed with the new amax
}

bool LayerQuantizer::weight_pinned() const {
    const at::Tensor& w = plan_.layer->weight;
    return pinned_ && cached_data_ == w.data_ptr() && cached_version_ == version_of(w);
}

void LayerQuantizer::pin_quantized_weight(const at::Tensor& q) {
    released_ = false;
    const at::Tensor& w = plan_.layer->weight;
    if (!q.defined() || q.sizes() != w.sizes())
        throw UserError("layer " + name() + ": the quantized weight must have the weight's shape");
    c10::InferenceMode normal_tensors(false);
    cached_ = q.to(w.device(), at::kFloat).contiguous().clone();
    cached_data_ = w.data_ptr();
    cached_version_ = version_of(w);
    pinned_ = true;
}

void LayerQuantizer::release_weight() {
    cached_ = at::Tensor();
    cached_data_ = nullptr;
    cached_version_ = -1;
    pinned_ = false;
    released_ = true;
}

at::Tensor LayerQuantizer::quantized_weight() {
    if (released_) throw std::logic_error("layer " + name() + ": the quantized weight was released after it was written");
    const at::Tensor& w = plan_.layer->weight;
    const bool same_weight = cached_.defined() && cached_data_ == w.data_ptr() && cached_version_ == version_of(w);
    if (same_weight && pinned_) return cached_;
    // A sibling's weight change moves a shared amax without touching this weight.
    const QuantSpec spec = weight_spec();
    const bool same_amax = !shared_amax_ || spec.fixed_amax == cached_amax_;
    if (same_weight && same_amax) return cached_;
    pinned_ = false;
    // The cache must be a normal tensor: it is created inside inference-mode evaluations but may
    // be used later where autograd records.
    c10::InferenceMode normal_tensors(false);
    at::NoGradGuard no_grad;
    const std::vector<int64_t> shape = weight_matrix_shape(layer());
    cached_ = fake_quantize(w.detach().reshape(shape), spec).view(w.sizes());
    cached_data_ = w.data_ptr();
    cached_version_ = version_of(w);
    cached_amax_ = spec.fixed_amax;
    return cached_;
}

void LayerQuantizer::set_weight_importance(std::vector<float> importance) {
    if (!weight_configured()) throw UserError("layer " + name() + " has no weight quantizer to give importance to");
    if (importance.empty())
        plan_.weight_spec.importance.clear();
    else
        set_importance(plan_.weight_spec, std::move(importance), weight_matrix_shape(layer()), "layer " + name() + " importance");
    cached_ = at::Tensor();  // quantize afresh
    cached_version_ = -1;
    pinned_ = false;
}

EncodedTensor LayerQuantizer::encode_weight() const {
    if (!weight_configured()) throw UserError("layer " + name() + " has no weight quantizer");
    // Encoded by the host codec (codes and scales are host data), from a CPU copy of a CUDA weight.
    const at::Tensor w = layer().weight.detach().reshape(weight_matrix_shape(layer())).to(at::kCPU, at::kFloat).contiguous();
    return encode_buffer(w.data_ptr<float>(), shape_of(w), weight_spec());
}

void LayerQuantizer::enable_learned_scales() {
    if (!weight_configured()) throw UserError("layer " + name() + ": learned scales need a weight quantizer");
    c10::InferenceMode normal_tensors(false);
    at::NoGradGuard no_grad;
    try {
        lsq_ = std::make_unique<LsqQuantizer>(weight_spec(), layer().weight.detach().reshape(weight_matrix_shape(layer())));
    } catch (const UserError& e) {
        throw UserError("layer " + name() + ": " + e.what());
    }
}

void LayerQuantizer::finish_learned_scales() {
    if (!lsq_) return;
    c10::InferenceMode normal_tensors(false);
    at::NoGradGuard no_grad;
    const at::Tensor w = layer().weight;
    const at::Tensor q = lsq_->forward(w.detach().reshape(weight_matrix_shape(layer()))).view(w.sizes());
    lsq_.reset();
    pin_quantized_weight(q);
}

at::Tensor LayerQuantizer::transform_weight(const at::Tensor& w) {
    if (!weight_on_) return w;
    if (lsq_) {
        // Learned steps: fresh every forward (they change every step); differentiable when
        // autograd records, in weight and in the steps.
        return lsq_->forward(w.reshape(weight_matrix_shape(layer()))).view(w.sizes());
    }
    if (at::GradMode::is_enabled() && w.requires_grad())
        return fake_quantize_ste(w.reshape(weight_matrix_shape(layer())), weight_spec(), SteOptions{clip_gradient_})
            .view(w.sizes());
    return quantized_weight();
}

}  // namespace ql
