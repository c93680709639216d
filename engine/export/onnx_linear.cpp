// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/onnx_linear.h"

#include <ATen/Functions.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/errors.h"
#include "engine/export/exact_weight_codes.h"
#include "engine/models/quantizable_layer.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/quantized_model.h"
#include "kernels/integer_quant.h"
#include "kernels/scaled_fp8.h"

namespace ql {
namespace {

bool is_fp8(const std::string& format) { return format == "fp8_e4m3" || format == "fp8_e5m2"; }

// Why the layer's quantizers have no QDQ form, or "" when they have one.
std::string unsupported(const LayerQuantizer& l) {
    if (l.layer().kind() != LayerKind::Linear) return "a " + std::string(layer_kind_name(l.layer().kind())) + " layer";
    if (l.layer().input_rotation) return "an online input rotation (QuaRot / SpinQuant R4)";
    if (l.weight_enabled()) {
        const QuantSpec w = l.weight_spec();
        const std::string& fam = w.info->family;
        if (fam == "int") {
            if (w.granularity == Granularity::Channel && w.axis != 0) return "integer weights per input channel";
        } else if (is_fp8(w.info->name)) {
            if (w.granularity == Granularity::Channel && w.axis != 0) return "FP8 weights per input channel";
            if (w.granularity != Granularity::Tensor && w.granularity != Granularity::Channel) return "FP8 weights in blocks";
        } else {
            return w.info->name + " weights";
        }
    }
    if (l.input_enabled()) {
        const QuantSpec& in = l.plan().input_spec;
        if (in.granularity != Granularity::Tensor) return describe(l.plan().input, true) + " inputs (only per-tensor inputs)";
        if (in.info->name == "int8") {
            if (in.asymmetric) return "asymmetric int8 inputs";
        } else if (!is_fp8(in.info->name)) {
            return describe(l.plan().input, true) + " inputs";
        }
    }
    return "";
}

// The bytes of `codes` ([out, in] row-major, one byte each) transposed to [in, out], packed two
// per byte for 4-bit types (element 2j in the low nibble of byte j).
std::vector<uint8_t> transposed_codes(const uint8_t* codes, int64_t out, int64_t in, bool four_bit) {
    const int64_t n = out * in;
    std::vector<uint8_t> t(static_cast<size_t>(four_bit ? (n + 1) / 2 : n), 0);
    for (int64_t k = 0; k < in; ++k)
        for (int64_t o = 0; o < out; ++o) {
            const int64_t i = k * out + o;
            const uint8_t c = codes[o * in + k];
            if (!four_bit) t[static_cast<size_t>(i)] = c;
            else t[static_cast<size_t>(i / 2)] = static_cast<uint8_t>(t[static_cast<size_t>(i / 2)] | ((c & 0x0F) << (4 * (i % 2))));
        }
    return t;
}

// values [out, per_row] (row-major) transposed to [per_row, out].
template <class T>
std::vector<T> transposed(const std::vector<T>& v, int64_t out, int64_t per_row) {
    std::vector<T> t(v.size());
    for (int64_t o = 0; o < out; ++o)
        for (int64_t j = 0; j < per_row; ++j) t[static_cast<size_t>(j * out + o)] = v[static_cast<size_t>(o * per_row + j)];
    return t;
}

std::vector<uint8_t> packed_nibbles(const std::vector<uint8_t>& v) {
    std::vector<uint8_t> p((v.size() + 1) / 2, 0);
    for (size_t i = 0; i < v.size(); ++i) p[i / 2] = static_cast<uint8_t>(p[i / 2] | ((v[i] & 0x0F) << (4 * (i % 2))));
    return p;
}

// The dequantized weight W^T [in, out] as a value: DequantizeLinear of the layer's codes.
std::string emit_weight(OnnxGraphWriter& g, LayerQuantizer& l, int64_t out, int64_t in) {
    const std::string p = l.name() + ".";
    const QuantSpec spec = l.weight_spec();
    const EncodedTensor e = exact_weight_codes(l, {out, in});
    const uint8_t* codes = e.codes.as<uint8_t>();
    std::vector<float> scales(e.scales.as<float>(), e.scales.as<float>() + e.scales.numel());
    const int64_t per_row = static_cast<int64_t>(scales.size()) / out;  // 1: channel; groups; 0: tensor
    std::vector<OnnxAttribute> attrs;
    std::vector<int64_t> scale_dims;
    if (scales.size() == 1) {
        // per tensor: a scalar scale
    } else if (per_row == 1) {
        scale_dims = {out};
        attrs.push_back(OnnxAttribute::of_int("axis", 1));
    } else {
        scale_dims = {per_row, out};
        scales = transposed(scales, out, per_row);
        attrs.push_back(OnnxAttribute::of_int("axis", 0));
        attrs.push_back(OnnxAttribute::of_int("block_size", spec.block));
    }
    std::vector<std::string> inputs(3);
    if (spec.info->family == "int") {
        const int bits = spec.info->element_bits;
        const bool four = bits == 4;
        const bool asym = spec.asymmetric;
        const OnnxType type = four ? (asym ? OnnxType::Uint4 : OnnxType::Int4) : (asym ? OnnxType::Uint8 : OnnxType::Int8);
        const std::vector<uint8_t> t = transposed_codes(codes, out, in, four);
        inputs[0] = g.initializer(p + "weight_quantized", type, {in, out}, t.data(), t.size());
        if (asym) {
            std::vector<uint8_t> zp(e.zero_points.size());
            for (size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<uint8_t>(e.zero_points[i]);
            if (per_row > 1) zp = transposed(zp, out, per_row);
            const std::vector<uint8_t> stored = four ? packed_nibbles(zp) : zp;
            inputs[2] = g.initializer(p + "weight_zero_point", four ? OnnxType::Uint4 : OnnxType::Uint8, scale_dims, stored.data(),
                                      stored.size());
        }
    } else {
        const OnnxType type = spec.info->name == "fp8_e4m3" ? OnnxType::Float8E4M3FN : OnnxType::Float8E5M2;
        const std::vector<uint8_t> t = transposed_codes(codes, out, in, false);
        inputs[0] = g.initializer(p + "weight_quantized", type, {in, out}, t.data(), t.size());
    }
    inputs[1] = g.initializer_f32(p + "weight_scale", scale_dims, scales);
    if (inputs[2].empty()) inputs.pop_back();
    return g.node("DequantizeLinear", inputs, p + "weight_dequantized", std::move(attrs));
}

// QuantizeLinear -> DequantizeLinear of the input value `x` with a per-tensor scale.
std::string emit_input_qdq(OnnxGraphWriter& g, const LayerQuantizer& l, const std::string& x) {
    std::string x_in = x;
    const std::string p = l.name() + ".";
    const QuantSpec& spec = l.plan().input_spec;
    const std::string& format = spec.info->name;
    const bool int8 = format == "int8";
    const kernels::Fp8Kind kind = format == "fp8_e5m2" ? kernels::Fp8Kind::E5M2 : kernels::Fp8Kind::E4M3;
    std::string scale;
    if (!l.plan().input.dynamic) {
        const float amax = l.input_amax();
        if (std::isnan(amax)) throw UserError("layer " + l.name() + ": the static input quantizer is not calibrated (no input amax to export)");
        const float s = int8 ? kernels::int_params_for_range(-amax, amax, kernels::IntFormat{8, false}).scale
                             : kernels::fp8_scale_for_amax(amax, kind);
        if (!(s > 0) || !std::isfinite(s))
            throw UserError("layer " + l.name() + ": calibrated input amax " + std::to_string(amax) + " gives the input scale " +
                            std::to_string(s) + ", which QuantizeLinear cannot divide by");
        scale = g.scalar_f32(p + "input_scale", s);
        if (int8) {
            // QuantLab's symmetric INT8 codes are [-127, 127]; QuantizeLinear saturates to -128.
            // Inputs below the calibrated range would take the one code QuantLab never gives.
            const std::string lo = g.scalar_f32(p + "input_clip_min", -127.0f * s), hi = g.scalar_f32(p + "input_clip_max", 127.0f * s);
            x_in = g.node("Clip", {x, lo, hi}, p + "input_clipped");
        }
    } else {
        // QuantLab's dynamic per-tensor scale: the batch's amax / max (FP8: 1 for an all-zero
        // batch; INT8: codes 0, which any positive scale gives too).
        const std::string amax = g.node("ReduceMax", {g.node("Abs", {x}, p + "input_abs")}, p + "input_amax",
                                        {OnnxAttribute::of_int("keepdims", 0)});
        const float qmax = int8 ? 127.0f : kernels::fp8_max(kind);
        const std::string ratio = g.node("Div", {amax, g.scalar_f32(p + "input_qmax", qmax)}, p + "input_scale_raw");
        scale = g.node("Max", {ratio, g.scalar_f32(p + "input_scale_floor", std::numeric_limits<float>::min())}, p + "input_scale");
    }
    const uint8_t zero = 0;
    const OnnxType zp_type = int8 ? OnnxType::Int8 : (kind == kernels::Fp8Kind::E4M3 ? OnnxType::Float8E4M3FN : OnnxType::Float8E5M2);
    const std::string zp = g.initializer(p + "input_zero_point", zp_type, {}, &zero, 1);
    const std::string q = g.node("QuantizeLinear", {x_in, scale, zp}, p + "input_quantized");
    return g.node("DequantizeLinear", {q, scale, zp}, p + "input_dequantized");
}

}  // namespace

std::string onnx_supported_formats_text() {
    return "weights int2..int8 (symmetric or asymmetric; per tensor, per output channel or in groups along the input), "
           "fp8_e4m3 / fp8_e5m2 (per tensor or per output channel); inputs off, int8 symmetric or fp8 per tensor "
           "(static or dynamic); SmoothQuant / AWQ pre_quant_scale";
}

void check_onnx_quantizers(const QuantizedModel& q) {
    for (const auto& lp : q.layers()) {
        const std::string why = unsupported(*lp);
        if (!why.empty())
            throw UserError("layer " + lp->name() + ": " + why + " has no ONNX QDQ form ONNX Runtime runs; the ONNX export writes " +
                            onnx_supported_formats_text());
    }
}

std::string emit_onnx_linear(OnnxGraphWriter& g, const QuantizedModel& q, const std::string& module, const std::string& x,
                             ExportManifest& manifest) {
    LayerQuantizer* l = q.find(module);
    const QuantizableLayer* layer = l ? &l->layer() : q.model().find_layer(module);
    if (!layer) throw UserError("ONNX export: the model has no layer " + module);
    const std::vector<int64_t> shape = weight_matrix_shape(*layer);
    const int64_t out = shape[0], in = shape[1];
    const std::string p = module + ".";
    std::string v = x;
    if (l) {
        if (const std::string why = unsupported(*l); !why.empty())
            throw UserError("layer " + module + ": " + why + " has no ONNX QDQ form; the ONNX export writes " + onnx_supported_formats_text());
        if (l->pre_quant_scale().defined()) {
            const at::Tensor s = l->pre_quant_scale().to(at::kCPU, at::kFloat).contiguous();
            v = g.node("Mul", {v, g.initializer_f32(p + "pre_quant_scale", {in}, std::vector<float>(s.data_ptr<float>(), s.data_ptr<float>() + in))},
                       p + "input_smoothed");
        }
        if (l->input_enabled()) v = emit_input_qdq(g, *l, v);
    }
    std::string w;
    if (l && l->weight_enabled()) {
        w = emit_weight(g, *l, out, in);
        const at::Tensor qw = l->quantized_weight().reshape({out, in}).to(at::kCPU, at::kFloat).contiguous();
        manifest.layers[module] = ManifestLayer{describe(l->plan().weight, false), weight_digest(qw.data_ptr<float>(), qw.numel()), std::nullopt};
    } else {
        const at::Tensor wt = layer->weight.reshape({out, in}).to(at::kCPU, at::kFloat).t().contiguous();
        w = g.initializer(p + "weight", OnnxType::Float, {in, out}, wt.data_ptr<float>(), static_cast<size_t>(wt.numel()) * 4);
    }
    v = g.node("MatMul", {v, w}, layer->bias.defined() ? p + "matmul" : p + "output");
    if (layer->bias.defined()) {
        const at::Tensor b = layer->bias.to(at::kCPU, at::kFloat).contiguous();
        v = g.node("Add", {v, g.initializer(p + "bias", OnnxType::Float, {out}, b.data_ptr<float>(), static_cast<size_t>(out) * 4)},
                   p + "output");
    }
    return v;
}

}  // namespace ql
