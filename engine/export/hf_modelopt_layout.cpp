// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/hf_modelopt_layout.h"

#include <cmath>

#include "engine/core/errors.h"
#include "engine/formats/format_codec.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quant_plan.h"
#include "kernels/nvfp4.h"
#include "kernels/scaled_fp8_element.h"

namespace ql {
namespace {

using D = SafetensorsDtype;

QuantOptions options(const std::string& format, const std::string& granularity = "", int64_t group = 0) {
    QuantOptions o;
    o.format = format;
    o.granularity = granularity;
    o.group_size = group;
    return o;
}

}  // namespace

std::string hf_supported_formats_text() {
    return "NVFP4 (nvfp4 weights, nvfp4 static inputs), NVFP4_AWQ (the same with a pre_quant_scale), "
           "W4A16_NVFP4 (nvfp4 weights, inputs off), FP8 (fp8_e4m3 per-tensor weights and static per-tensor inputs), "
           "W4A16_AWQ (int4 symmetric group weights, inputs off), MXFP4 (mxfp4 weights, mxfp4 dynamic floor inputs)";
}

HfLayerFormat hf_format_named(const std::string& algo, int64_t group, const std::string& where) {
    HfLayerFormat f;
    f.quant_algo = algo;
    if (algo == "NVFP4" || algo == "NVFP4_AWQ" || algo == "W4A16_NVFP4") {
        if (group != 0 && group != 16) throw UserError(where + ": " + algo + " group_size must be 16, got " + std::to_string(group));
        f.group_size = 16;
        f.weight = options("nvfp4");
        f.input_quantized = algo != "W4A16_NVFP4";
        if (f.input_quantized) f.input = options("nvfp4");
        f.pre_quant_scale = algo == "NVFP4_AWQ";
    } else if (algo == "FP8") {
        f.weight = options("fp8_e4m3", "tensor");
        f.input = options("fp8_e4m3", "tensor");
        f.input_quantized = true;
    } else if (algo == "W4A16_AWQ") {
        if (group <= 0) throw UserError(where + ": W4A16_AWQ needs a positive group_size");
        f.group_size = group;
        f.weight = options("int4", "group", group);
        f.pre_quant_scale = true;  // optional per layer (present when AWQ left one)
    } else if (algo == "MXFP4" || algo == "mxfp4") {
        if (group != 0 && group != 32) throw UserError(where + ": MXFP4 group_size must be 32, got " + std::to_string(group));
        f.quant_algo = "MXFP4";
        f.group_size = 32;
        f.weight = options("mxfp4");
        f.input = options("mxfp4");
        f.input_quantized = true;
        f.input_dynamic = true;
    } else {
        throw UserError(where + ": quant_algo '" + algo + "' is not one QuantLab reads; supported: " +
                        hf_supported_formats_text());
    }
    return f;
}

HfLayerFormat hf_format_of(const LayerQuantizer& l) {
    const std::string& n = l.name();
    auto refuse = [&](const std::string& why) -> HfLayerFormat {
        throw UserError("layer " + n + ": " + why + " has no Model Optimizer HF layout; supported: " +
                         hf_supported_formats_text());
    };
    if (l.layer().kind() != LayerKind::Linear) return refuse("a " + std::string(layer_kind_name(l.layer().kind())) + " layer");
    const QuantizerSettings& w = l.plan().weight;
    const QuantizerSettings& in = l.plan().input;
    const QuantSpec& ws = l.weight_spec();
    const std::string wf = ws.info->name;
    const bool has_in = l.input_configured();
    const std::string inf = has_in ? l.plan().input_spec.info->name : "";
    const bool pqs = l.pre_quant_scale().defined();
    const std::string what = describe(w, false) + " weights with " + describe(in, true) + " inputs" +
                             (pqs ? " and a pre_quant_scale" : "");
    if (wf == "nvfp4") {
        if (!has_in) {
            if (pqs) return refuse(what);
            return hf_format_named("W4A16_NVFP4", 16, n);
        }
        if (inf != "nvfp4" || in.dynamic) return refuse(what);
        return hf_format_named(pqs ? "NVFP4_AWQ" : "NVFP4", 16, n);
    }
    if (wf == "fp8_e4m3") {
        if (ws.granularity != Granularity::Tensor || !has_in || inf != "fp8_e4m3" || in.dynamic ||
            l.plan().input_spec.granularity != Granularity::Tensor || pqs)
            return refuse(what);
        return hf_format_named("FP8", 0, n);
    }
    if (wf == "int4") {
        if (ws.granularity != Granularity::Group || ws.asymmetric || has_in) return refuse(what);
        if (weight_matrix_shape(l.layer())[0] % 2 != 0)
            throw UserError("layer " + n + ": W4A16_AWQ packs two output rows per byte; the output dimension must be even");
        if (const int64_t in = weight_matrix_shape(l.layer())[1]; in % ws.block != 0)
            throw UserError("layer " + n + ": a W4A16_AWQ checkpoint has no short last group (Model Optimizer's export "
                            "refuses it too: \"partial blocks are not supported\"); in_features " + std::to_string(in) +
                            " is not a multiple of the group size " + std::to_string(ws.block) +
                            " (a group size that divides it, or the ONNX export, keeps this layer)");
        return hf_format_named("W4A16_AWQ", ws.block, n);
    }
    if (wf == "mxfp4") {
        // MX inputs are always dynamic (per-block scales from the data, no calibrated amax).
        if (!has_in || inf != "mxfp4" || l.plan().input_spec.mx_round_up || pqs) return refuse(what);
        return hf_format_named("MXFP4", 32, n);
    }
    return refuse(what);
}

std::vector<ExpectedTensor> hf_expected_tensors(const std::string& layer, const HfLayerFormat& f, int64_t out, int64_t in) {
    const std::string p = layer + ".";
    std::vector<ExpectedTensor> e;
    const std::string& a = f.quant_algo;
    if (a == "NVFP4" || a == "NVFP4_AWQ" || a == "W4A16_NVFP4") {
        e.push_back({p + "weight", D::U8, {out, (in + 1) / 2}});
        e.push_back({p + "weight_scale", D::F8_E4M3, {out, in / 16}});
        e.push_back({p + "weight_scale_2", D::F32, {}});
        if (f.input_quantized) e.push_back({p + "input_scale", D::F32, {}});
    } else if (a == "FP8") {
        e.push_back({p + "weight", D::F8_E4M3, {out, in}});
        e.push_back({p + "weight_scale", D::F32, {}});
        e.push_back({p + "input_scale", D::F32, {}});
    } else if (a == "W4A16_AWQ") {
        e.push_back({p + "weight", D::U8, {out / 2, in}});
        e.push_back({p + "weight_scale", D::F32, {out, in / f.group_size}});
    } else if (a == "MXFP4") {
        e.push_back({p + "weight", D::U8, {out, (in + 1) / 2}});
        e.push_back({p + "weight_scale", D::U8, {out, in / 32}});
    }
    if (f.pre_quant_scale && a != "W4A16_AWQ") e.push_back({p + "pre_quant_scale", D::F32, {in}});
    return e;
}

float input_scale_for_amax(const HfLayerFormat& f, float amax) {
    if (f.quant_algo == "FP8") return kernels::fp8_scale_of(amax, 448.0f);
    return kernels::nvfp4_global_scale(amax);
}

float input_amax_for_scale(const HfLayerFormat& f, float scale, const std::string& where) {
    if (!std::isfinite(scale) || scale < 0) throw UserError(where + ": input_scale must be finite and >= 0");
    const float divisor = f.quant_algo == "FP8" ? 448.0f : 6.0f * 448.0f;
    // scale = fl(amax / divisor): the nearest float to scale * divisor nearly always maps back;
    // otherwise one of its neighbours does (division is monotonic).
    const float start = scale * divisor;
    float up = start, down = start;
    for (int i = 0; i < 64; ++i) {
        if (input_scale_for_amax(f, up) == scale) return up;
        if (input_scale_for_amax(f, down) == scale) return down;
        up = std::nextafter(up, INFINITY);
        down = std::nextafter(down, 0.0f);
    }
    throw UserError(where + ": no input amax gives input_scale " + std::to_string(scale));
}

}  // namespace ql
