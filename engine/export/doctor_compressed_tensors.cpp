// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor's checks of a compressed-tensors folder, as vLLM (compressed_tensors.py and
// the schemes under compressed_tensors/schemes/) and compressed-tensors' own loaders see it:
// the quantization_config schema (pydantic: extra="forbid" for schemes and args, "ignore" at the
// top level), which modules each config group targets and ignores vs the tensors present, dtypes
// and shapes per compression format, one global / per-tensor scale per fused layer group,
// multiplier (not divisor) global scales, the weights decoded back (with the file's own global
// scale) vs the digests QuantLab recorded, and the KV-cache scheme vs its scales.
#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "engine/core/errors.h"
#include "engine/export/compressed_tensors_export.h"
#include "engine/export/compressed_tensors_layout.h"
#include "engine/export/doctor_context.h"
#include "engine/quant/fused_layers.h"
#include "kernels/minifloat.h"

namespace ql {
namespace {

using nlohmann::json;
constexpr const char* kVllm = "vLLM";

struct Group {
    std::string name;
    std::vector<std::string> targets;
    CtScheme scheme;
    bool readable = false;  // QuantLab reads (and checks) this scheme
};

float scalar_f32(const ExportTensor& t, int64_t i = 0) {
    float v;
    std::memcpy(&v, t.bytes.data() + i * 4, 4);
    return v;
}

std::string dims(const std::vector<int64_t>& s) {
    std::string o = "[";
    for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
    return o + "]";
}

std::string number(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

}  // namespace

void check_compressed_tensors_folder(const HfFolderView& f, DoctorContext& ctx) {
    ctx.check("config-schema", "quantization_config is valid for compressed-tensors 0.20 (no unknown keys, known formats)");
    ctx.check("coverage", "every module a config group targets has its tensors; no quantization tensors on ignored or untargeted modules");
    ctx.check("dtypes-shapes", "dtypes and shapes of every quantized module's tensors per compression format");
    ctx.check("fused-scales", "layers vLLM fuses (q/k/v, gate/up) share one scheme and one global / per-tensor scale");
    ctx.check("scale-conventions", "global scales are multipliers (compressed-tensors) and per-tensor scales divisors, not swapped");
    ctx.check("reproduces-quantlab", "the packed weights decode to exactly the weights QuantLab evaluated (quantlab_export.json)");
    ctx.check("consumer-arithmetic", "compressed-tensors' own arithmetic decodes the same values as QuantLab's");
    ctx.check("kv-cache", "kv_cache_scheme and the per-attention k_scale / v_scale agree and vLLM accepts them");
    const std::string qc_where = "config.json quantization_config";
    if (!f.config.is_object() || !f.config.contains("quantization_config") || !f.config["quantization_config"].is_object()) {
        for (const char* c : {"config-schema", "coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab",
                              "consumer-arithmetic", "kv-cache"})
            ctx.skipped(c, "no quantization_config");
        return;
    }
    const json& qc = f.config["quantization_config"];

    // Schema.
    static const std::set<std::string> top = {"config_groups", "format", "global_compression_ratio", "ignore", "kv_cache_scheme",
                                              "quant_method", "quantization_status", "sparsity_config", "transform_config",
                                              "version", "moe_sparsity_config"};
    auto schema_error = [&](const std::string& where, const std::string& problem) {
        ctx.error("config-schema", where, problem, std::string(kVllm) + " fails to load the config (pydantic validation error)",
                  "remove or correct the field (compressed-tensors QuantizationConfig / QuantizationScheme / QuantizationArgs)");
    };
    // QuantizationConfig is extra="ignore" in compressed-tensors 0.20 (and vLLM reads the keys it
    // knows): an unknown top-level key loads, but whatever it says is dropped. QuantizationScheme
    // and QuantizationArgs are extra="forbid": an unknown key there fails the load (below).
    for (auto it = qc.begin(); it != qc.end(); ++it)
        if (!top.count(it.key()))
            ctx.warning("config-schema", qc_where + "." + it.key(),
                        "unknown key (compressed-tensors' QuantizationConfig ignores extra keys)",
                        "compressed-tensors and vLLM load the config without it: what it says is lost",
                        "remove the key, or check its spelling");
    // Unknown QuantizationArgs keys, each named (pydantic reports every extra field); false if any.
    auto args_keys_known = [&](const json& args, const std::string& where) {
        bool known = true;
        if (!args.is_object()) return known;  // ct_args_from_json says what is wrong
        for (auto k = args.begin(); k != args.end(); ++k)
            if (!ct_args_keys().count(k.key())) {
                schema_error(where + "." + k.key(), "unknown key (QuantizationArgs forbids extra keys)");
                known = false;
            }
        return known;
    };
    std::string top_format = qc.contains("format") && qc["format"].is_string() ? qc["format"].get<std::string>() : "";
    if (qc.contains("quantization_status") && qc["quantization_status"] != "compressed")
        ctx.warning("config-schema", qc_where + ".quantization_status", "is " + qc["quantization_status"].dump() + ", not \"compressed\"",
                    "vLLM expects compressed (packed) weights", "export compressed checkpoints");
    if (qc.contains("sparsity_config") && qc["sparsity_config"].is_object() && !qc["sparsity_config"].empty())
        ctx.warning("config-schema", qc_where + ".sparsity_config", "sparsity is not checked by QuantLab", "", "");
    if (qc.contains("transform_config") && qc["transform_config"].is_object() && !qc["transform_config"].empty())
        ctx.warning("config-schema", qc_where + ".transform_config", "transforms (rotations) are not checked by QuantLab", "", "");
    std::vector<std::string> ignore;
    if (qc.contains("ignore") && qc["ignore"].is_array())
        for (const json& i : qc["ignore"])
            if (i.is_string()) ignore.push_back(i.get<std::string>());
    std::vector<Group> groups;
    if (!qc.contains("config_groups") || !qc["config_groups"].is_object()) {
        schema_error(qc_where + ".config_groups", "missing or not an object");
    } else {
        static const std::set<std::string> scheme_keys = {"targets", "weights", "input_activations", "output_activations", "format"};
        for (auto it = qc["config_groups"].begin(); it != qc["config_groups"].end(); ++it) {
            const std::string where = qc_where + ".config_groups." + it.key();
            const json& g = *it;
            if (!g.is_object()) {
                schema_error(where, "a preset-name list is not checked by QuantLab; expected a QuantizationScheme object");
                continue;
            }
            Group grp;
            grp.name = it.key();
            bool ok = true;
            for (auto k = g.begin(); k != g.end(); ++k)
                if (!scheme_keys.count(k.key())) {
                    schema_error(where + "." + k.key(), "unknown key (QuantizationScheme forbids extra keys)");
                    ok = false;
                }
            if (!g.contains("targets") || !g["targets"].is_array() || g["targets"].empty()) {
                schema_error(where + ".targets", "missing or empty");
                ok = false;
            } else {
                for (const json& t : g["targets"])
                    if (t.is_string()) grp.targets.push_back(t.get<std::string>());
            }
            std::string format = g.contains("format") && g["format"].is_string() ? g["format"].get<std::string>() : top_format;
            if (format.empty() || format == "mixed-precision") {
                schema_error(where + ".format", "no format for this group (top-level format is '" + top_format + "')");
                ok = false;
            }
            bool args_known = true;
            for (const char* args : {"weights", "input_activations", "output_activations"})
                if (g.contains(args) && !args_keys_known(g[args], where + "." + args)) args_known = false;
            if (!args_known) {  // each unknown key is reported above; the scheme cannot be read
                groups.push_back(grp);
                continue;
            }
            try {
                if (!g.contains("weights") || g["weights"].is_null()) throw UserError(where + ".weights: missing (weight-less groups are not checked)");
                const CtArgs w = ct_args_from_json(g["weights"], where + ".weights");
                std::optional<CtArgs> in;
                if (g.contains("input_activations") && !g["input_activations"].is_null())
                    in = ct_args_from_json(g["input_activations"], where + ".input_activations");
                if (g.contains("output_activations") && !g["output_activations"].is_null())
                    ctx.warning("config-schema", where + ".output_activations", "output activation quantization is not checked", "", "");
                if (ok) {
                    try {
                        grp.scheme = ct_scheme_from_args(format, w, in, where);
                        grp.readable = true;
                    } catch (const UserError& e) {
                        ctx.warning("config-schema", where, std::string("not checked further: ") + e.what(), "", "");
                    }
                }
            } catch (const UserError& e) {
                schema_error(where, e.what());
            }
            groups.push_back(grp);
        }
    }
    if (!qc.contains("quant_method") || qc["quant_method"] != "compressed-tensors")
        schema_error(qc_where + ".quant_method", "expected \"compressed-tensors\"");
    ctx.ran("config-schema", std::to_string(groups.size()) + " config group(s)");

    if (!f.checkpoint) {
        for (const char* c : {"coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab", "consumer-arithmetic", "kv-cache"})
            ctx.skipped(c, "the checkpoint does not open");
        return;
    }

    // Coverage, dtypes and shapes.
    auto ignored = [&](const std::string& m) {
        for (const std::string& i : ignore)
            if (ct_name_matches(i, m)) return true;
        return false;
    };
    auto group_of = [&](const std::string& m) -> const Group* {
        for (const Group& g : groups)
            for (const std::string& t : g.targets)
                if ((t == "Linear" && !is_embedding_name(m)) || ct_name_matches(t, m)) return &g;
        return nullptr;
    };
    struct Layer {
        std::string name;
        const Group* group;
        int64_t out, in;
        std::vector<ExportTensor> tensors;
    };
    std::vector<Layer> layers;
    int64_t checked = 0;
    for (const std::string& m : f.matrix_modules()) {
        const std::set<std::string>& params = f.modules.at(m);
        std::vector<std::string> qparams;
        for (const std::string& p : params)
            if (is_quantization_param(p) && p != "k_scale" && p != "v_scale" && p != "q_scale") qparams.push_back(p);
        const bool is_ignored = ignored(m);
        const Group* g = is_ignored ? nullptr : group_of(m);
        if (is_ignored || !g) {
            if (!qparams.empty() || params.count("weight_packed"))
                ctx.error("coverage", m,
                          std::string(is_ignored ? "is in `ignore`" : "is targeted by no config group") + " but holds quantization tensors (" +
                              m + "." + (qparams.empty() ? std::string("weight_packed") : qparams.front()) + ")",
                          std::string(kVllm) + " loads it as a dense layer and fails on the unexpected tensors",
                          is_ignored ? "remove the module from `ignore`, or store its weight dense without scales"
                                     : "add the module to a config group's targets");
            continue;
        }
        if (!g->readable) continue;
        // The weight's shape: weight_shape (pack-quantized), the dense weight, or the packed bytes.
        int64_t out = 0, in = 0;
        const std::string& fmt = g->scheme.format;
        if (params.count("weight_shape") && f.checkpoint->info(m + ".weight_shape").shape == std::vector<int64_t>{2}) {
            const ExportTensor s = f.tensor(m + ".weight_shape");
            int64_t d[2] = {0, 0};
            if (s.dtype == SafetensorsDtype::I64) std::memcpy(d, s.bytes.data(), 16);
            out = d[0];
            in = d[1];
        } else if (params.count("weight_packed")) {
            const auto& shape = f.checkpoint->info(m + ".weight_packed").shape;
            if (shape.size() == 2) {
                out = shape[0];
                in = fmt == "pack-quantized" ? shape[1] * 32 / g->scheme.weights.num_bits : shape[1] * 2;
            }
        } else if (params.count("weight")) {
            const auto& shape = f.checkpoint->info(m + ".weight").shape;
            if (shape.size() == 2) out = shape[0], in = shape[1];
        }
        ++checked;
        bool complete = true;
        std::vector<ExportTensor> mine;
        std::set<std::string> expected_params;
        for (const ExpectedTensor& e : ct_expected_tensors(m, g->scheme, out, in)) {
            expected_params.insert(e.name.substr(m.size() + 1));
            if (!f.has(e.name)) {
                ctx.error("coverage", e.name, "missing (" + g->name + " is " + fmt + ", which stores it)",
                          std::string(kVllm) + " fails to load (KeyError / missing parameter)", "export again with the scale tensors");
                complete = false;
                continue;
            }
            const SafetensorsFile::TensorInfo& info = f.checkpoint->info(e.name);
            if (info.dtype != e.dtype || info.shape != e.shape) {
                std::string hint;
                if (e.name == m + ".weight_packed" && info.dtype != e.dtype)
                    hint = info.dtype == SafetensorsDtype::I32 ? " (I32 words are pack-quantized's layout: the config names another format)"
                                                              : info.dtype == SafetensorsDtype::U8 ? " (U8 nibbles are nvfp4/mxfp4-pack-quantized's layout)" : "";
                ctx.error("dtypes-shapes", e.name,
                          std::string(safetensors_dtype_name(info.dtype)) + " " + dims(info.shape) + ", expected " +
                              safetensors_dtype_name(e.dtype) + " " + dims(e.shape) + " for " + fmt + hint,
                          std::string(kVllm) + " fails to load (shape / dtype mismatch) or computes with misread bytes",
                          "make the config's format and arguments match the tensors, or export again");
                complete = false;
                continue;
            }
            mine.push_back(f.tensor(e.name));
        }
        for (const std::string& p : qparams)
            if (!expected_params.count(p))
                ctx.error("coverage", m + "." + p, "is not a tensor of " + fmt + " (" + g->scheme.key() + ")",
                          std::string(kVllm) + " fails to load (unexpected parameter)", "remove it or fix the config group");
        if (complete) layers.push_back({m, g, out, in, std::move(mine)});
    }
    ctx.report().layers += checked;
    ctx.ran("coverage", std::to_string(checked) + " quantized module(s)");
    ctx.ran("dtypes-shapes", std::to_string(layers.size()) + " module(s) complete");

    // Decoded weights, both arithmetics.
    std::map<std::string, std::vector<float>> decoded;
    auto find_t = [](const std::vector<ExportTensor>& ts, const std::string& n) -> const ExportTensor* {
        for (const ExportTensor& t : ts)
            if (t.name == n) return &t;
        return nullptr;
    };
    // Scale conventions: a multiplier global scale decodes weights of plausible size; one written
    // as a divisor (Model Optimizer's weight_scale_2) decodes them to ~ 2688^2 / amax.
    int64_t conventions = 0;
    for (const Layer& l : layers) {
        const std::vector<float> ct = dequantize_ct_layer(l.name, l.group->scheme, l.out, l.in, l.tensors, CtArithmetic::CompressedTensors);
        const float amax = finite_amax(ct);
        ++conventions;
        if (l.group->scheme.format == "nvfp4-pack-quantized") {
            const float G = scalar_f32(*find_t(l.tensors, l.name + ".weight_global_scale"));
            if (!(G > 0) || !std::isfinite(G))
                ctx.error("scale-conventions", l.name + ".weight_global_scale", "is " + number(G) + " (must be finite and > 0)",
                          std::string(kVllm) + " loads the layer with NaN / Inf weights", "export again");
            else if (amax > 1e4f || (f.manifest && f.manifest->layers.count(l.name) && f.manifest->layers.at(l.name).nvfp4_global_scale &&
                                     G == *f.manifest->layers.at(l.name).nvfp4_global_scale && G < 1.0f))
                ctx.error("scale-conventions", l.name + ".weight_global_scale",
                          "is " + number(G) + ": the weights decode to |w| up to " + number(amax) +
                              "; it looks like Model Optimizer's divisor weight_scale_2 (amax / 2688) where compressed-tensors multiplies (2688 / amax)",
                          std::string(kVllm) + " loads the layer with wrong numbers", "store weight_global_scale = 1 / weight_scale_2");
            if (l.group->scheme.input_static()) {
                const float Gi = scalar_f32(*find_t(l.tensors, l.name + ".input_global_scale"));
                if (!(Gi > 0) || !std::isfinite(Gi))
                    ctx.error("scale-conventions", l.name + ".input_global_scale", "is " + number(Gi) + " (must be finite and > 0)",
                              std::string(kVllm) + " computes NaN / Inf activations", "export again");
                else if (2688.0f / Gi > 1e5f)
                    ctx.warning("scale-conventions", l.name + ".input_global_scale",
                                "is " + number(Gi) + ", i.e. an input amax of " + number(2688.0f / Gi) +
                                    ": it looks like Model Optimizer's divisor input_scale where compressed-tensors multiplies",
                                std::string(kVllm) + " quantizes the activations with a wrong scale", "store input_global_scale = 1 / input_scale");
            }
        } else if (amax > 1e4f) {
            ctx.error("scale-conventions", l.name + ".weight_scale",
                      "the weights decode to |w| up to " + number(amax) + ": the scale looks inverted (a multiplier written where compressed-tensors multiplies q by a step size)",
                      std::string(kVllm) + " loads the layer with wrong numbers", "store the step size (amax / qmax)");
        }
        decoded[l.name] = ct;
    }
    ctx.ran("scale-conventions", std::to_string(conventions) + " module(s)");

    // Fused groups: one scheme, one global / per-tensor scale.
    std::vector<std::string> names;
    for (const Layer& l : layers) names.push_back(l.name);
    int64_t fused = 0;
    for (const std::vector<std::string>& group : fused_layer_groups(names)) {
        ++fused;
        std::vector<const Layer*> ls;
        for (const std::string& n : group)
            for (const Layer& l : layers)
                if (l.name == n) ls.push_back(&l);
        bool same_scheme = true;
        for (const Layer* l : ls) same_scheme = same_scheme && l->group->scheme == ls.front()->group->scheme;
        const std::string members = group.front() + " .. " + group.back().substr(group.back().rfind('.') + 1);
        if (!same_scheme) {
            ctx.error("fused-scales", members, "the fused shards have different schemes (" + ls.front()->group->scheme.key() + " vs others)",
                      std::string(kVllm) + " refuses to load (fused layers need one scheme)", "quantize the fused layers alike");
            continue;
        }
        auto compare = [&](const std::string& param, bool error, const std::string& consumer) {
            std::vector<float> v;
            for (const Layer* l : ls) {
                const ExportTensor* t = find_t(l->tensors, l->name + "." + param);
                if (!t || t->bytes.size() != 4) return;
                v.push_back(scalar_f32(*t));
            }
            bool equal = true;
            std::string values;
            for (size_t i = 0; i < v.size(); ++i) {
                equal = equal && v[i] == v.front();
                values += (i ? ", " : "") + number(v[i]);
            }
            if (equal) return;
            const std::string problem = "the fused shards' " + param + " differ (" + values + ")";
            const std::string fix = "quantize with \"share_fused_scales\": true (the NVFP4 and FP8 presets do) and export again";
            if (error) ctx.error("fused-scales", members, problem, consumer, fix);
            else ctx.warning("fused-scales", members, problem, consumer, fix);
        };
        const std::string& fmt = ls.front()->group->scheme.format;
        if (fmt == "nvfp4-pack-quantized") {
            compare("weight_global_scale", true,
                    "vLLM keeps the largest global scale of the fused layer: the other shards' block scales were computed for "
                    "their own global scale, so they load with wrong numbers");
            compare("input_global_scale", false,
                    "vLLM quantizes the fused layer's input with the largest input_global_scale: other activations than QuantLab evaluated");
        } else if (fmt == "float-quantized" || fmt == "naive-quantized") {
            if (ls.front()->group->scheme.weights.strategy == "tensor")
                compare("weight_scale", false, "vLLM requantizes the shards to the largest weight_scale: re-rounded weights");
            compare("input_scale", false, "vLLM uses the largest input_scale for the fused layer: other activations than QuantLab evaluated");
        }
    }
    ctx.ran("fused-scales", std::to_string(fused) + " fused group(s)");

    // Against what QuantLab evaluated.
    if (!f.manifest) {
        ctx.skipped("reproduces-quantlab", "no quantlab_export.json (not a QuantLab export): nothing to compare with");
    } else {
        int64_t n = 0, ulp_layers = 0, ulp_elements = 0, ulp_differing = 0, ulp_one = 0, ulp_two = 0, ulp_max = 0;
        for (const auto& [name, m] : f.manifest->layers) {
            const auto it = std::find_if(layers.begin(), layers.end(), [&](const Layer& l) { return l.name == name; });
            if (it == layers.end()) {
                if (!f.modules.count(name))
                    ctx.error("reproduces-quantlab", name, "QuantLab exported this layer but the checkpoint has no tensors for it",
                              std::string(kVllm) + " loads the model without it (or fails)", "export again");
                continue;  // incomplete layers were reported above
            }
            // NVFP4: the weights are decoded with the global scale the file holds. The file stores
            // G = fl(1 / g) for QuantLab's g, and fl(1 / fl(1 / g)) need not be g again: so a G
            // that is exactly what QuantLab wrote decodes with g itself, any other G with 1 / G --
            // a wrong global scale then decodes to other weights than QuantLab evaluated.
            float g = std::nanf("");
            bool global_scale_differs = false;
            if (it->group->scheme.format == "nvfp4-pack-quantized" && m.nvfp4_global_scale) {
                const float recorded = *m.nvfp4_global_scale;
                const float G = scalar_f32(*find_t(it->tensors, name + ".weight_global_scale"));
                global_scale_differs = G != 1.0f / recorded;
                g = global_scale_differs ? 1.0f / G : recorded;
                if (global_scale_differs)
                    ctx.error("scale-conventions", name + ".weight_global_scale",
                              "is " + number(G) + ", QuantLab's global scale g = " + number(recorded) + " needs 1 / g = " +
                                  number(1.0f / recorded),
                              std::string(kVllm) + " loads the layer with wrong numbers", "store weight_global_scale = 1 / weight_scale_2");
            }
            const std::vector<float> q = dequantize_ct_layer(name, it->group->scheme, it->out, it->in, it->tensors, CtArithmetic::QuantLab, g);
            ++n;
            if (weight_digest(q.data(), static_cast<int64_t>(q.size())) != m.weight_sha256)
                ctx.error("reproduces-quantlab", name,
                          "the packed weight decodes to other values than the weight QuantLab evaluated (SHA-256 differs)",
                          std::string(kVllm) + " loads the layer with wrong numbers",
                          global_scale_differs ? "store weight_global_scale = 1 / g (scale-conventions), or export again"
                                               : "export again (packing or nibble order is wrong)");
            // compressed-tensors' arithmetic (NVFP4: e2m1 x (s / G)).
            const UlpDiff d = ulp_difference(q, decoded[name]);
            const bool nvfp4 = it->group->scheme.format == "nvfp4-pack-quantized";
            if (nvfp4) {
                ++ulp_layers;
                ulp_elements += static_cast<int64_t>(q.size());
            }
            // NVFP4: fl(e2m1 * fl(s8 / fl(1/g))) vs fl(e2m1 * fl(s8 * g)), five roundings of relative
            // error <= 2^-24 between them: at most 5 float32 ulp.
            if (d.differing > 0 && d.max_ulps <= 5 && nvfp4) {
                ulp_differing += d.differing;
                ulp_one += d.one_ulp;
                ulp_two += d.two_ulps;
                ulp_max = std::max(ulp_max, d.max_ulps);
            } else if (d.differing > 0) {
                ctx.warning("consumer-arithmetic", name,
                            std::to_string(d.differing) + " of " + std::to_string(q.size()) +
                                " elements differ from QuantLab's decoding by up to " + std::to_string(d.max_ulps) + " float32 ulp",
                            "compressed-tensors computes other weights than QuantLab", "report this");
            }
        }
        if (ulp_layers > 0)
            ctx.info("consumer-arithmetic", "",
                     std::to_string(ulp_differing) + " of " + std::to_string(ulp_elements) + " NVFP4 weight elements (" +
                         std::to_string(ulp_layers) + " layers) decode differently in compressed-tensors' arithmetic "
                         "e2m1 x (s / global) than QuantLab's e2m1 x (s x g): " + std::to_string(ulp_one) + " by 1 float32 ulp, " +
                         std::to_string(ulp_two) + " by 2, none beyond " + std::to_string(ulp_max) +
                         " (within the 5-ulp bound of its roundings; docs/EXPORT.md)");
        ctx.ran("reproduces-quantlab", std::to_string(n) + " layer(s) against their SHA-256");
        ctx.ran("consumer-arithmetic", std::to_string(n) + " layer(s)");
    }
    if (!ctx.has_run("consumer-arithmetic")) ctx.skipped("consumer-arithmetic", "needs quantlab_export.json");

    // KV cache.
    std::vector<std::string> attentions;
    for (const auto& [module, params] : f.modules)
        if (params.count("k_scale") || params.count("v_scale")) attentions.push_back(module);
    const bool scheme = qc.contains("kv_cache_scheme") && !qc["kv_cache_scheme"].is_null();
    if (scheme) {
        if (args_keys_known(qc["kv_cache_scheme"], qc_where + ".kv_cache_scheme")) {
            try {
                const CtArgs kv = ct_args_from_json(qc["kv_cache_scheme"], qc_where + ".kv_cache_scheme");
                if (kv.type != "float" || kv.num_bits != 8 || (kv.strategy != "tensor" && kv.strategy != "attn_head") || !kv.symmetric)
                    ctx.error("kv-cache", qc_where + ".kv_cache_scheme", "is " + std::to_string(kv.num_bits) + "-bit " + kv.type + " " + kv.strategy,
                              "vLLM refuses it (float 8-bit, tensor or attn_head, symmetric only)", "use an FP8 E4M3 KV cache");
            } catch (const UserError& e) {
                schema_error(qc_where + ".kv_cache_scheme", e.what());
            }
        }
        // Every attention module of the model (a parent of q/k/v projections) needs both scales.
        std::set<std::string> expected;
        for (const std::string& m : f.matrix_modules()) {
            const size_t dot = m.rfind('.');
            if (dot != std::string::npos && m.compare(dot + 1, std::string::npos, "k_proj") == 0) expected.insert(m.substr(0, dot));
        }
        for (const std::string& a : expected)
            for (const char* p : {"k_scale", "v_scale"}) {
                const std::string name = a + "." + p;
                if (!f.has(name)) {
                    ctx.error("kv-cache", name, "missing while kv_cache_scheme is set",
                              "vLLM falls back to a scale of 1.0: the KV cache is quantized with wrong numbers", "export the calibrated k/v scales");
                    continue;
                }
                const ExportTensor t = f.tensor(name);
                if ((t.dtype != SafetensorsDtype::F32 && t.dtype != SafetensorsDtype::BF16 && t.dtype != SafetensorsDtype::F16) ||
                    t.shape.empty())
                    ctx.error("kv-cache", name, std::string(safetensors_dtype_name(t.dtype)) + " " + dims(t.shape) + ", expected a float [1] or [heads]",
                              "vLLM fails to load it", "store k_scale / v_scale as float32 [1]");
                else if (t.dtype == SafetensorsDtype::F32 && !(scalar_f32(t) > 0 && std::isfinite(scalar_f32(t))))
                    ctx.error("kv-cache", name, "is " + number(scalar_f32(t)) + " (must be finite and > 0)",
                              "vLLM ignores it (falls back to 1.0) or divides by zero", "export the calibrated scale");
            }
        ctx.ran("kv-cache", std::to_string(expected.size()) + " attention module(s)");
    } else if (!attentions.empty()) {
        ctx.warning("kv-cache", attentions.front() + ".k_scale", "k/v scales are stored but kv_cache_scheme is null",
                    "vLLM uses them only with --kv-cache-dtype fp8; the config does not say the cache is quantized",
                    "set kv_cache_scheme or drop the scales");
        ctx.ran("kv-cache", "scales without a scheme");
    } else {
        ctx.ran("kv-cache", "no KV-cache quantization");
    }
}

}  // namespace ql
