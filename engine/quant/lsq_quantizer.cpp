// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/lsq_quantizer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <string>

#include "engine/core/errors.h"
#include "engine/core/nd_array.h"
#include "engine/formats/tensor_quantize.h"
#include "kernels/integer_quant.h"

namespace ql {
namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// The initial step sizes: the integer kernels' own parameters (amax / Q), in the layout of
// LsqQuantizer::scale().
std::vector<float> initial_scales(const at::Tensor& w, const QuantSpec& spec) {
    const at::Tensor c = w.detach().to(at::kCPU, at::kFloat).contiguous();
    const std::vector<int64_t> shape = shape_of(c);
    std::vector<kernels::IntParams> p;
    if (spec.granularity == Granularity::Group) {
        const int64_t cols = shape.empty() ? 1 : shape.back();
        const kernels::RowBlocks L{c.numel() / cols, cols, spec.block};
        p.resize(static_cast<size_t>(L.block_count()));
        std::vector<uint8_t> codes(static_cast<size_t>(c.numel()));
        kernels::int_encode_groups(c.data_ptr<float>(), L, kernels::IntFormat{spec.info->element_bits, false},
                                   codes.data(), p.data());
    } else {
        p = int_channel_params(c.data_ptr<float>(), shape, spec);
    }
    std::vector<float> s(p.size());
    for (size_t i = 0; i < p.size(); ++i) s[i] = p[i].scale;
    return s;
}

}  // namespace

LsqQuantizer::LsqQuantizer(const QuantSpec& spec, const at::Tensor& w) : spec_(spec) {
    if (spec.info == nullptr) throw UserError("LSQ quantizer: the quantization spec has no format");
    const std::string& name = spec.info->name;
    if (spec.info->family != "int")
        throw UserError("LSQ quantizer needs an integer format (int8, int4, int3, int2), got " + name);
    if (spec.asymmetric)
        throw UserError("LSQ quantizer: " + name + " is asymmetric; LSQ learns a symmetric step size only (LSQ+ offsets are not supported)");
    if (!w.defined() || !w.is_floating_point())
        throw UserError("LSQ quantizer needs a floating-point weight" +
                        (w.defined() ? ", got " + std::string(w.dtype().name()) : std::string()));
    shape_ = shape_of(w);
    const int64_t n = numel_of(shape_);
    if (n == 0) throw UserError("LSQ quantizer: the weight of shape " + shape_string(shape_) + " is empty");
    const int rank = static_cast<int>(shape_.size());
    const int bits = spec.info->element_bits;
    qmax_ = (int64_t{1} << (bits - 1)) - 1;

    int64_t per_scale = n;
    std::vector<int64_t> scale_shape;
    if (spec.granularity == Granularity::Tensor) {
        grouped_ = {n};
        scale_view_ = {1};
        scale_shape = {1};
    } else if (spec.granularity == Granularity::Channel) {
        if (spec.axis < 0 || spec.axis >= rank)
            throw UserError("LSQ quantizer: channel axis " + std::to_string(spec.axis) + " is out of range for shape " +
                            shape_string(shape_));
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < spec.axis; ++i) outer *= shape_[i];
        for (int i = spec.axis + 1; i < rank; ++i) inner *= shape_[i];
        const int64_t channels = shape_[spec.axis];
        grouped_ = {outer, channels, inner};
        scale_view_ = {1, channels, 1};
        scale_shape = {channels};
        per_scale = n / channels;
    } else if (spec.granularity == Granularity::Group) {
        const int64_t cols = rank == 0 ? 1 : shape_.back();
        if (spec.block <= 0 || cols % spec.block != 0)
            throw UserError("LSQ quantizer: group size " + std::to_string(spec.block) +
                            " does not divide the last dimension of shape " + shape_string(shape_));
        const int64_t groups = cols / spec.block;
        grouped_ = {n / cols, groups, spec.block};
        scale_view_ = {n / cols, groups, 1};
        scale_shape = rank == 0 ? std::vector<int64_t>{1} : shape_;
        scale_shape.back() = groups;
        per_scale = spec.block;
    } else {
        throw UserError("LSQ quantizer: " + name + " needs per-tensor, per-channel or per-group granularity");
    }
    gradient_scale_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(per_scale) * static_cast<double>(qmax_)));

    const std::vector<float> s = initial_scales(w, spec);
    scale_ = at::tensor(at::ArrayRef<float>(s), at::TensorOptions().dtype(at::kFloat))
                 .reshape(scale_shape)
                 .to(w.device())
                 .detach()
                 .requires_grad_(true);
}

at::Tensor LsqQuantizer::forward(const at::Tensor& x) const {
    if (!x.defined() || !x.is_floating_point())
        throw UserError("LSQ quantizer: forward needs a floating-point tensor" +
                        (x.defined() ? ", got " + std::string(x.dtype().name()) : std::string()));
    if (shape_of(x) != shape_)
        throw UserError("LSQ quantizer was made for shape " + shape_string(shape_) + ", got a tensor of shape " +
                        shape_string(shape_of(x)));
    const at::Tensor xg = x.to(at::kFloat).reshape(grouped_);
    const at::Tensor s = scale_.view(scale_view_);
    const at::Tensor xd = xg.detach(), sd = s.detach();
    const double Q = static_cast<double>(qmax_);

    // The value, in the integer kernels' order (kernels/integer_step.h IntStep::code / fake):
    // x / s, RNE (at::round rounds half to even), clamp, * s; a zero scale gives 0, NaN stays.
    const at::Tensor v = xd / sd;
    const at::Tensor r = at::round(v);
    const at::Tensor zero_scale = sd == 0;
    at::Tensor q = at::clamp(r, -Q, Q) * sd;
    q = at::where(zero_scale, 0, q);
    q = at::where(at::isnan(xd), xd, q);
    if (!at::GradMode::is_enabled() || (!xg.requires_grad() && !s.requires_grad())) return q.view(shape_);

    // The gradients enter through terms whose value is exactly +0 (t.detach() - t for finite t)
    // and whose derivative is the LSQ one: q - ((a.detach() - a) + (b.detach() - b)) == q bit
    // for bit, with a = x * inside (dq/dx) and b = s * g * dq/ds.
    const at::Tensor inside = at::abs(v) <= Q;  // false for NaN and for the +-Inf of a zero scale
    at::Tensor ds = at::where(inside, r - v, at::sign(v) * Q) * gradient_scale_;
    ds = at::where(at::isnan(v).logical_or(zero_scale), 0, ds);
    const at::Tensor a = at::where(at::isfinite(xd), xg, 0) * inside.to(at::kFloat);
    const at::Tensor b = s * ds;
    const at::Tensor zero = (a.detach() - a) + (b.detach() - b);
    return (q - zero).view(shape_);
}

}  // namespace ql
