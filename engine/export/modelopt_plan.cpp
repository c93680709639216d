// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/modelopt_plan.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

// Keys in the order Model Optimizer's presets list them (quantizer_name first).
using ojson = nlohmann::ordered_json;

// Model Optimizer's (exponent, mantissa) pairs for QuantLab's float element formats.
const std::map<std::string, std::pair<int, int>>& float_bits() {
    static const std::map<std::string, std::pair<int, int>> m = {
        {"nvfp4", {2, 1}},      {"fp8_e4m3", {4, 3}},   {"mxfp8_e4m3", {4, 3}}, {"mxfp8_e5m2", {5, 2}},
        {"mxfp6_e3m2", {3, 2}}, {"mxfp6_e2m3", {2, 3}}, {"mxfp4", {2, 1}}};
    return m;
}

ojson pair_json(std::pair<int, int> p) { return ojson::array({p.first, p.second}); }

// The QuantizerAttributeConfig fields for one enabled quantizer; nullopt for a passthrough
// format (the layer stays in high precision: "enable": false).
std::optional<ojson> quantizer_cfg(const LayerQuantizer& l, bool is_input) {
    const QuantizerSettings& s = is_input ? l.plan().input : l.plan().weight;
    const QuantSpec& spec = is_input ? l.plan().input_spec : l.plan().weight_spec;
    const std::string which = is_input ? "input" : "weight";
    const std::string where = "modelopt plan: layer " + l.name() + " (" + which + " quantizer)";
    if (!spec.info) throw UserError(where + ": no format");
    const std::string& format = spec.info->name;
    const std::string& family = spec.info->family;
    const auto fail = [&](const std::string& why) {
        throw UserError(where + ": format " + format + " " + why + " (Model Optimizer's quantizers: nvfp4, fp8_e4m3, "
                        "mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, mxint8, symmetric int2..int8)");
    };
    if (family == "passthrough") return std::nullopt;
    // Model Optimizer blocks a Conv2d weight along its last axis (kw); QuantLab along in * kh * kw.
    const bool conv = l.layer().kind() != LayerKind::Linear;
    if (conv && !is_input && (spec.granularity == Granularity::Block || spec.granularity == Granularity::Group))
        fail("on a Conv2d weight has no Model Optimizer form: its blocks run along in * kh * kw, Model Optimizer's along kw");
    if (is_input && s.calibrator != "max" && !s.dynamic && family != "mx")
        fail("with calibrator " + s.calibrator + " has no Model Optimizer quantizer attribute (only max calibration maps)");
    ojson cfg = ojson::object();
    if (family == "nvfp4") {
        // Model Optimizer's NVFP4 input has dynamic E4M3 block scales and a calibrated (static)
        // global amax, which is QuantLab's static NVFP4 input; a per-batch global amax is not.
        if (is_input && s.dynamic) fail("with a dynamic global scale is not Model Optimizer's NVFP4 input (its global amax is calibrated)");
        cfg["num_bits"] = pair_json(float_bits().at(format));
        cfg["effective_bits"] = 4.5;  // as NVFP4_DEFAULT_CFG writes it (read by autoquant only)
        cfg["block_sizes"] = {{"-1", 16}, {"type", "dynamic"}, {"scale_bits", pair_json({4, 3})}};
    } else if (family == "fp8") {
        if (format != "fp8_e4m3") fail("is not expressible: Model Optimizer takes E5M2 only with dynamic blocks");
        cfg["num_bits"] = pair_json(float_bits().at(format));
        if (spec.granularity == Granularity::Channel) {
            if (is_input) fail("per channel on an input has no Model Optimizer form here");
            cfg["axis"] = spec.axis;
        } else {
            cfg["axis"] = nullptr;
        }
        if (is_input && s.dynamic) cfg["type"] = "dynamic";
    } else if (family == "mx") {
        if (spec.mx_round_up) fail("with scale rule rceil is not expressible: Model Optimizer's MX scales use the OCP floor rule");
        if (format == "mxint8") cfg["num_bits"] = 8;
        else cfg["num_bits"] = pair_json(float_bits().at(format));
        cfg["block_sizes"] = {{"-1", 32}, {"type", "dynamic"}, {"scale_bits", pair_json({8, 0})}};
    } else if (family == "int") {
        if (spec.asymmetric) fail("asymmetric has no Model Optimizer form here (its integer quantizers are symmetric)");
        cfg["num_bits"] = spec.info->element_bits;
        cfg["narrow_range"] = true;
        if (spec.granularity == Granularity::Group) {
            if (is_input) fail("in groups on an input has no Model Optimizer form here");
            cfg["block_sizes"] = {{"-1", spec.block}, {"type", "static"}};
        } else if (spec.granularity == Granularity::Channel) {
            if (is_input) fail("per channel on an input has no Model Optimizer form here");
            cfg["axis"] = spec.axis;
        } else {
            cfg["axis"] = nullptr;
        }
        if (is_input && s.dynamic) cfg["type"] = "dynamic";
    } else {
        fail("has no Model Optimizer quantizer");
    }
    return cfg;
}

ojson algorithm_json(const PtqAlgorithm& a) {
    if (a.method == "max") return "max";
    if (a.method == "smoothquant") {
        if (a.smoothquant_fold) throw UserError("modelopt plan: algorithm.fold has no Model Optimizer setting (smoothquant)");
        return {{"method", "smoothquant"}, {"alpha", a.smoothquant_alpha}};
    }
    if (a.method == "awq") {
        if (a.awq_fold) throw UserError("modelopt plan: algorithm.fold has no Model Optimizer setting (awq)");
        return {{"method", a.awq_clip ? "awq_full" : "awq_lite"}, {"alpha_step", 1.0 / static_cast<double>(a.awq_grid)}};
    }
    if (a.method == "gptq") {
        // Model Optimizer's GPTQCalibConfig has block_size and perc_damp (a fraction, as ours) but no
        // act_order, so a plan that needs it is refused rather than changed.
        if (a.gptq_act_order) throw UserError("modelopt plan: algorithm.act_order has no Model Optimizer setting (gptq)");
        return {{"method", "gptq"}, {"block_size", a.gptq_block_size}, {"perc_damp", a.gptq_damp_percent}};
    }
    throw UserError("modelopt plan: algorithm " + a.method + " has no Model Optimizer form");
}

}  // namespace

nlohmann::ordered_json modelopt_plan_config(const QuantizedModel& q, ModeloptPlanCounts* counts) {
    const Recipe& r = q.recipe();
    if (r.kv_cache.enabled)
        throw UserError("modelopt plan: the recipe's kv_cache section is not part of the per-layer plan export; remove it "
                        "and add Model Optimizer's own KV-cache preset (e.g. mtq.FP8_KV_CFG) to the config");
    if (!r.rotation.method.empty())
        throw UserError("modelopt plan: the recipe's rotation section (" + r.rotation.method +
                        ") has no form in this export; the layers' rotations would be lost");
    ojson entries = ojson::array();
    entries.push_back({{"quantizer_name", "*"}, {"enable", false}});
    ModeloptPlanCounts n;
    for (const auto& lp : q.layers()) {
        const LayerQuantizer& l = *lp;
        std::optional<ojson> w, in;
        if (l.weight_enabled()) w = quantizer_cfg(l, false);
        if (l.input_enabled()) in = quantizer_cfg(l, true);
        const std::string prefix = "*" + l.name();
        if (!w && !in) {
            entries.push_back({{"quantizer_name", prefix + ".*_quantizer"}, {"enable", false}});
            ++n.disabled_layers;
            continue;
        }
        if (w) {
            entries.push_back({{"quantizer_name", prefix + ".weight_quantizer"}, {"cfg", *w}});
            ++n.quantized_layers;
        } else {
            entries.push_back({{"quantizer_name", prefix + ".weight_quantizer"}, {"enable", false}});
        }
        if (in) entries.push_back({{"quantizer_name", prefix + ".input_quantizer"}, {"cfg", *in}});
        else entries.push_back({{"quantizer_name", prefix + ".input_quantizer"}, {"enable", false}});
    }
    if (n.quantized_layers == 0) throw UserError("modelopt plan: the plan quantizes no layer of the model");
    if (counts) *counts = n;
    return {{"quant_cfg", entries}, {"algorithm", algorithm_json(r.algorithm)}};
}

}  // namespace ql
