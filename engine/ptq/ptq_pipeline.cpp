// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/ptq_pipeline.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cmath>
#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/calib/amax_calibration.h"
#include "engine/calib/calibration_forward.h"
#include "engine/calib/calibration_observers.h"
#include "engine/calib/input_statistics.h"
#include "engine/calib/kv_cache_statistics.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/ptq/awq.h"
#include "engine/calib/importance_collector.h"
#include "engine/ptq/awq_fold.h"
#include "engine/ptq/gptq.h"
#include "engine/ptq/weight_clipping.h"
#include "engine/ptq/input_groups.h"
#include "engine/ptq/smoothquant.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool configured(const LayerQuantizer& l) { return l.weight_configured() || l.input_configured(); }

// y = layer(x) with an explicit weight and input transform (FP reference, RTN baseline).
at::Tensor layer_output(const QuantizableLayer& layer, const at::Tensor& x, const at::Tensor& weight) {
    if (const auto* conv = dynamic_cast<const Conv2dLayer*>(&layer))
        return at::conv2d(x, weight, conv->bias, {conv->stride, conv->stride}, {conv->padding, conv->padding},
                          {conv->dilation, conv->dilation}, conv->groups);
    return at::linear(x, weight, layer.bias);
}

double sqnr_db(const at::Tensor& y, const at::Tensor& yq) {
    const double signal = y.to(at::kDouble).pow(2).sum().item<double>();
    const double noise = (y - yq).to(at::kDouble).pow(2).sum().item<double>();
    if (noise == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signal / noise);
}

// The layer's input scaled along features: Linear [..., in] * s, Conv2d [B, C, H, W] * s[C].
at::Tensor scale_features(const QuantizableLayer& layer, const at::Tensor& x, const at::Tensor& s) {
    if (layer.kind() == LayerKind::Conv2d) return x * s.view({1, -1, 1, 1});
    return x * s;
}

at::Tensor weight_matrix(const QuantizableLayer& layer) { return layer.weight.reshape(weight_matrix_shape(layer)); }

float calibrated_amax(const LayerQuantizer& l, InputStatistics& stats) {
    const QuantizerSettings& in = l.plan().input;
    if (in.calibrator == "max" || !stats.histogram()) return static_cast<float>(stats.amax());
    AmaxCalibration c;
    c.method = parse_amax_method(in.calibrator);
    c.percentile = in.percentile;
    return static_cast<float>(calibrate_amax(*stats.histogram(), c, l.plan().input_spec));
}

// A tied lm_head's weight is the embedding's: algorithms must not change it in place.
bool shares_weight(const Model& model, const QuantizableLayer& layer) {
    for (const EmbeddingLayer* e : model.embedding_layers())
        if (e != &layer && e->weight.data_ptr() == layer.weight.data_ptr()) return true;
    return false;
}

// Groups of layers that GPTQ quantizes together: a transformer block ("model.layers.3.") or a
// single layer outside blocks, in forward order.
std::vector<std::vector<LayerQuantizer*>> gptq_blocks(const QuantizedModel& q) {
    std::vector<std::vector<LayerQuantizer*>> blocks;
    std::string current;
    for (const auto& l : q.layers()) {
        if (!l->weight_configured()) continue;
        // The block is the name up to its first all-digit component.
        std::string block = l->name();
        size_t start = 0;
        bool found = false;
        while (start <= l->name().size()) {
            size_t dot = l->name().find('.', start);
            if (dot == std::string::npos) dot = l->name().size();
            const std::string part = l->name().substr(start, dot - start);
            if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
                block = l->name().substr(0, dot);
                found = true;
                break;
            }
            start = dot + 1;
        }
        if (!found) block = l->name();
        if (blocks.empty() || block != current) blocks.emplace_back();
        current = block;
        blocks.back().push_back(l.get());
    }
    return blocks;
}

}  // namespace

PtqResult run_ptq_pipeline(QuantizedModel& q, const Dataset& calibration, const PtqOptions& options, JobSink& sink,
                           const CancellationToken& cancel) {
    const auto t0 = Clock::now();
    const PtqAlgorithm& alg = q.recipe().algorithm;
    const bool smooth = alg.method == "smoothquant", awq = alg.method == "awq", gptq = alg.method == "gptq";
    if (calibration.size() == 0) throw UserError("calibration data '" + calibration.name + "' holds no examples");
    Model& model = q.model();
    q.set_enabled(false);

    // 0. Rotation, before the FP weights and inputs are recorded.
    if (q.recipe().rotation.enabled() && !q.rotated()) {
        sink.progress(0, 1, "rotate");
        const RotationReport r = rotate_model(q);
        std::vector<std::string> notes = r.applied;
        for (const std::string& line : r.applied) sink.log(LogLevel::Info, "rotation: " + line);
        for (const std::string& line : r.skipped) {
            sink.log(LogLevel::Info, "rotation skipped: " + line);
            notes.push_back("skipped: " + line);
        }
        q.mark_rotated(notes);
        sink.progress(1, 1, "rotate");
    }

    std::set<std::string> active;
    std::map<std::string, LayerPtqReport> reports;
    std::map<std::string, at::Tensor> fp_weight;  // the weight before any algorithm changed it
    for (const auto& l : q.layers()) {
        if (!configured(*l)) continue;
        active.insert(l->name());
        LayerPtqReport r;
        r.layer = l->name();
        r.kind = layer_kind_name(l->layer().kind());
        r.weight_quantizer = describe(l->plan().weight, false);
        r.input_quantizer = describe(l->plan().input, true);
        r.method = l->weight_configured() ? (smooth || awq || gptq ? alg.method : "rtn") : "-";
        r.parameters = l->layer().weight.numel();
        reports[l->name()] = r;
        c10::InferenceMode normal(false);
        fp_weight[l->name()] = l->layer().weight.detach().clone();
    }
    if (active.empty() && q.kv_caches().empty())
        throw UserError(q.recipe().source + ": the recipe quantizes no layer of this model");

    // 1. FP statistics (the inputs of the original model).
    InputStatisticsOptions first;
    first.channel_amax = smooth;
    first.sample_rows = options.sample_rows;
    const bool weights_change_inputs = smooth || awq;
    std::map<std::string, at::Tensor> fp_samples;
    std::map<std::string, float> fp_amax;  // max-calibrated static amax of the FP inputs (RTN baseline)
    std::map<std::string, at::Tensor> channel_amax;  // [in] per input channel (SmoothQuant)
    std::map<std::string, std::pair<at::Tensor, at::Tensor>> kv_samples;  // cached K, V token rows
    std::map<std::string, int64_t> kv_tokens;
    {
        CalibrationObservers pass(q, active, first, calibration, /*histogram=*/!weights_change_inputs);
        KvCacheObservers kv_pass(q, options.sample_rows, calibration);
        run_calibration_forward(model, calibration, options.batch_size, "calibrate", sink, cancel);
        for (const auto& kv : q.kv_caches()) {
            KvCacheStatistics& ks = kv_pass.at(kv->name());
            if (kv->needs_amax()) kv->set_amax(ks.key_amax(kv->amax_count()), ks.value_amax(kv->amax_count()));
            kv_samples[kv->name()] = {ks.key_samples(), ks.value_samples()};
            kv_tokens[kv->name()] = ks.tokens();
        }
        for (const auto& l : q.layers()) {
            if (!active.count(l->name())) continue;
            InputStatistics& s = pass.at(l->name());
            fp_samples[l->name()] = s.samples();
            fp_amax[l->name()] = static_cast<float>(s.amax());
            if (!weights_change_inputs && l->input_needs_amax()) l->set_input_amax(calibrated_amax(*l, s));
            if (smooth) channel_amax[l->name()] = s.channel_amax();
        }
        if (!weights_change_inputs) q.share_fused_input_amax();
    }
    // The factor each layer's FP input is divided by after folding (SmoothQuant into a norm).
    std::map<std::string, at::Tensor> fold_divisor;

    // 2a. SmoothQuant.
    if (smooth) {
        std::vector<std::string> names;
        for (const auto& l : q.layers())
            if (l->weight_configured() && l->input_configured()) names.push_back(l->name());
        const std::vector<InputGroup> groups = input_groups(model, names);
        std::map<std::string, at::Tensor*> params;
        std::vector<std::pair<std::string, at::Tensor>> named = model.named_parameters();
        int64_t done = 0;
        for (const InputGroup& g : groups) {
            cancel.throw_if_cancelled();
            std::vector<at::Tensor> weights;
            at::Tensor act;
            for (const std::string& name : g.layers) {
                LayerQuantizer* l = q.find(name);
                weights.push_back(weight_matrix(l->layer()));
                auto it = channel_amax.find(name);
                if (it != channel_amax.end() && it->second.defined()) act = it->second;
            }
            if (!act.defined()) continue;  // only unquantized readers (cannot happen for listed layers)
            bool tied = false;
            for (const std::string& name : g.layers) tied = tied || shares_weight(model, q.find(name)->layer());
            if (tied) {
                sink.log(LogLevel::Warning, "SmoothQuant skips " + g.layers.front() +
                                                ": its weight is tied to the embedding, which smoothing would change");
                continue;
            }
            if (g.norm.empty() && alg.smoothquant_fold) {
                // "fold": only where a norm takes 1/s (SmoothQuant's smooth_ln_fcs, llm-compressor's
                // mappings), so that no pre_quant_scale is left for layouts without one.
                sink.log(LogLevel::Info, "SmoothQuant (fold) leaves " + g.layers.front() + " unsmoothed: no norm precedes it");
                for (const std::string& name : g.layers) reports[name].method = "rtn";
                continue;
            }
            const at::Tensor s = smoothquant_scales(act, weights, alg.smoothquant_alpha);
            c10::NoGradGuard no_grad;
            for (const std::string& name : g.layers) {
                QuantizableLayer& layer = q.find(name)->layer();
                layer.weight.mul_(layer.kind() == LayerKind::Conv2d ? s.view({1, -1, 1, 1}) : s.unsqueeze(0));
            }
            if (!g.norm.empty()) {
                for (auto& [pname, tensor] : named) {
                    if (pname == g.norm + ".weight" || pname == g.norm + ".bias") tensor.div_(s);
                }
                for (const std::string& name : g.layers) fold_divisor[name] = s;
            } else {
                for (const std::string& name : g.layers) {
                    LayerQuantizer* l = q.find(name);
                    const at::Tensor inv = 1.0 / s;
                    l->set_pre_quant_scale(l->pre_quant_scale().defined() ? l->pre_quant_scale() * inv : inv);
                }
            }
            done += static_cast<int64_t>(g.layers.size());
            sink.progress(done, static_cast<int64_t>(names.size()), "smoothquant");
        }
    }

    // 2b. AWQ, layer by layer on the FP inputs.
    if (awq) {
        std::vector<LayerQuantizer*> awq_layers;
        for (const auto& l : q.layers())
            if (l->weight_configured()) awq_layers.push_back(l.get());
        AwqOptions o;
        o.grid = alg.awq_grid;
        o.clip_search = alg.awq_clip;
        int64_t done = 0;
        if (alg.awq_fold) {
            for (const FoldedAwqLayer& r : run_folded_awq(q, fp_samples, o, sink, cancel)) {
                reports[r.layer].method = r.folded_into.empty() ? "rtn" : "awq";
                reports[r.layer].awq_alpha = r.alpha;
                if (r.folded_into.empty())
                    sink.log(LogLevel::Info, "AWQ (fold) rounds " + r.layer + " to nearest: no preceding norm or Linear takes its scale");
            }
            awq_layers.clear();
        }
        for (LayerQuantizer* l : awq_layers) {
            cancel.throw_if_cancelled();
            const auto tl = Clock::now();
            at::Tensor x = fp_samples.at(l->name());
            if (l->layer().kind() == LayerKind::Conv2d || !x.defined() || shares_weight(model, l->layer())) {
                sink.log(LogLevel::Warning, "AWQ skips " + l->name() +
                                                " (Linear layers with their own weight only); it is rounded to nearest");
                reports[l->name()].method = "rtn";
            } else {
                // The search scales this weight alone: its own amax (a fused group's shared amax
                // follows the scaled weights once they are written back).
                QuantSpec spec = l->weight_spec();
                if (l->shared_weight_amax()) spec.fixed_amax = std::nanf("");
                const AwqResult r = awq_search(weight_matrix(l->layer()), x, spec, o, cancel);
                c10::NoGradGuard no_grad;
                l->layer().weight.copy_(r.weight.view(l->layer().weight.sizes()));
                l->set_pre_quant_scale(r.pre_quant_scale);
                reports[l->name()].awq_alpha = r.best_alpha;
            }
            reports[l->name()].seconds = seconds_since(tl);
            sink.progress(++done, static_cast<int64_t>(awq_layers.size()), "awq");
        }
    }

    // 3. Static input scales after the inputs changed.
    if (weights_change_inputs) {
        InputStatisticsOptions second;
        CalibrationObservers pass(q, active, second, calibration, /*histogram=*/true);
        run_calibration_forward(model, calibration, options.batch_size, "calibrate", sink, cancel);
        for (const auto& l : q.layers())
            if (active.count(l->name()) && l->input_needs_amax()) l->set_input_amax(calibrated_amax(*l, pass.at(l->name())));
        q.share_fused_input_amax();
    }

    // 3b. Weight clipping search (calibrator mse / imatrix_mse), on the weights as step 2 left them.
    {
        std::vector<LayerQuantizer*> searched;
        for (const auto& l : q.layers()) {
            const std::string& c = l->plan().weight.calibrator;
            if (l->weight_configured() && (c == "mse" || c == "imatrix_mse")) searched.push_back(l.get());
        }
        if (!searched.empty() && gptq)
            throw UserError(q.recipe().source + ": weight calibrator '" + searched.front()->plan().weight.calibrator +
                            "' and algorithm gptq both decide the weights; use one");
        int64_t done = 0;
        for (LayerQuantizer* l : searched) {
            cancel.throw_if_cancelled();
            const auto tl = Clock::now();
            const bool weighted = l->plan().weight.calibrator == "imatrix_mse";
            std::vector<float> importance;
            if (weighted) {
                if (!options.imatrix)
                    throw UserError(q.recipe().source + ": weight calibrator imatrix_mse needs an importance matrix (recipe "
                                    "\"imatrix\": F or ptq --imatrix F; quantlab-cli imatrix makes one)");
                const std::string entry = importance_entry_name(model.config(), l->name(), /*process_output=*/true);
                const ImportanceEntry* e = entry.empty() ? nullptr : options.imatrix->find(entry);
                if (!e)
                    throw UserError("imatrix: no entry '" + (entry.empty() ? l->name() + ".weight" : entry) + "' for layer " +
                                    l->name() + (l->name() == "lm_head" ? " (collect it with quantlab-cli imatrix --process-output)" : ""));
                if (e->columns != input_features(l->layer()) || e->matrices() != 1)
                    throw UserError("imatrix: entry '" + entry + "' has " + std::to_string(e->columns) + " columns, layer " +
                                    l->name() + " reads " + std::to_string(input_features(l->layer())));
                importance = e->mean_sq();
            }
            if (l->layer().kind() != LayerKind::Linear) {
                sink.log(LogLevel::Warning, "weight clipping search skips " + l->name() + " (Linear layers only)");
                continue;
            }
            if (l->weight_spec().info && l->weight_spec().info->family == "gguf") {
                // GGUF formats search their own scales; the importance goes into that search
                // (ggml's quant_weights), as llama-quantize --imatrix does.
                if (!weighted)
                    throw UserError(q.recipe().source + ": layer " + l->name() + ": weight calibrator mse does not apply to " +
                                    l->weight_spec().info->name + " (its block scales come from llama.cpp's own search; "
                                    "imatrix_mse gives that search the importance)");
                l->set_weight_importance(importance);
                reports[l->name()].method = "imatrix";
                sink.progress(++done, static_cast<int64_t>(searched.size()), "clip search");
                continue;
            }
            const WeightClipping c = search_weight_clipping(weight_matrix(l->layer()), l->weight_spec(), importance);
            l->pin_quantized_weight(c.quantized.view(l->layer().weight.sizes()));
            LayerPtqReport& r = reports[l->name()];
            r.method = l->plan().weight.calibrator;
            r.seconds += seconds_since(tl);
            sink.layer_metric(l->name(), "clip_error_before", c.error_before);
            sink.layer_metric(l->name(), "clip_error_after", c.error_after);
            sink.progress(++done, static_cast<int64_t>(searched.size()), "clip search");
        }
    }

    // 4. GPTQ, block by block, each block seeing the earlier blocks quantized.
    if (gptq) {
        const auto blocks = gptq_blocks(q);
        int64_t total = 0, done = 0;
        for (const auto& b : blocks) total += static_cast<int64_t>(b.size());
        GptqOptions o;
        o.block_size = alg.gptq_block_size;
        o.damp_percent = alg.gptq_damp_percent;
        o.act_order = alg.gptq_act_order;
        for (const auto& block : blocks) {
            std::map<std::string, std::unique_ptr<HessianAccumulator>> hessians;
            for (LayerQuantizer* l : block) {
                if (l->layer().kind() != LayerKind::Linear) continue;
                auto h = std::make_unique<HessianAccumulator>(input_features(l->layer()));
                HessianAccumulator* hp = h.get();
                // The Hessian of what the matmul sees: the input after its own quantizer.
                l->set_input_observer([hp, l](const at::Tensor& x) {
                    hp->add(l->input_configured() ? fake_quantize(x, l->input_spec_for_forward()) : x);
                });
                hessians[l->name()] = std::move(h);
            }
            if (!hessians.empty()) run_calibration_forward(model, calibration, options.batch_size, "calibrate", sink, cancel);
            for (LayerQuantizer* l : block) {
                l->set_input_observer(nullptr);
                cancel.throw_if_cancelled();
                const auto tl = Clock::now();
                auto it = hessians.find(l->name());
                if (it == hessians.end()) {
                    sink.log(LogLevel::Warning, "GPTQ skips " + l->name() + " (Linear layers only); it is rounded to nearest");
                    reports[l->name()].method = "rtn";
                } else {
                    const GptqResult r = gptq_quantize(weight_matrix(l->layer()), it->second->hessian(), l->weight_spec(), o, cancel);
                    l->pin_quantized_weight(r.weight.view(l->layer().weight.sizes()));
                    reports[l->name()].gptq_proxy_loss = r.proxy_loss;
                    if (r.dead_columns > 0)
                        sink.log(LogLevel::Info, l->name() + ": " + std::to_string(r.dead_columns) +
                                                     " input channels were zero on all calibration data");
                }
                reports[l->name()].seconds = seconds_since(tl);
                l->set_enabled(true);  // later blocks calibrate on this block quantized
                sink.progress(++done, total, "gptq");
            }
        }
    }

    // 5. Everything on; per-layer error against the FP layer on FP inputs.
    q.set_enabled(true);
    PtqResult result;
    int64_t measured = 0;
    {
        c10::InferenceMode inference;
        for (const auto& l : q.layers()) {
            if (!active.count(l->name())) continue;
            cancel.throw_if_cancelled();
            LayerPtqReport& r = reports[l->name()];
            const QuantizableLayer& layer = l->layer();
            const at::Tensor x = fp_samples.at(l->name());
            if (l->weight_configured()) {
                const at::Tensor w = weight_matrix(layer);
                r.weight_mse = (w - l->quantized_weight().reshape(w.sizes())).pow(2).mean().item<double>();
                r.weight_bits = weight_storage_bits(l->weight_spec(), weight_matrix_shape(layer));
            }
            if (l->input_needs_amax()) r.input_amax = l->input_amax();
            if (x.defined() && x.numel() > 0) {
                const at::Tensor& w_fp = fp_weight.at(l->name());
                const at::Tensor y = layer_output(layer, x, w_fp);
                auto it = fold_divisor.find(l->name());
                const at::Tensor x_in = it == fold_divisor.end() ? x : scale_features(layer, x, 1.0 / it->second);
                const at::Tensor x_q = l->transform_input(x_in);
                const at::Tensor yq = layer_output(layer, x_q, l->weight_enabled() ? l->quantized_weight() : layer.weight);
                r.output_mse = (y - yq).pow(2).mean().item<double>();
                r.output_sqnr_db = sqnr_db(y, yq);
                if (l->input_needs_amax() && r.input_amax > 0) {
                    const at::Tensor seen = l->pre_quant_scale().defined() ? scale_features(layer, x_in, l->pre_quant_scale()) : x_in;
                    r.input_clipped_fraction = seen.abs().gt(r.input_amax).to(at::kDouble).mean().item<double>();
                }
                // Plain RTN on the FP layer: FP weights rounded, FP inputs with their own max amax.
                // Conv2d inputs go back to contiguous NCHW, as LayerQuantizer gives them: for a
                // permuted (channels-last) view LibTorch 2.x's oneDNN picks another convolution
                // kernel, which rounds differently, and max calibration would no longer equal RTN.
                at::Tensor x_rtn = x;
                if (l->input_configured()) {
                    QuantSpec in = l->plan().input_spec;
                    if (l->input_needs_amax()) in.fixed_amax = fp_amax.at(l->name());
                    x_rtn = layer.kind() == LayerKind::Conv2d && in.block > 0
                                ? fake_quantize(x.permute({0, 2, 3, 1}).contiguous(), in).permute({0, 3, 1, 2}).contiguous()
                                : fake_quantize(x, in);
                }
                at::Tensor w_rtn = w_fp;
                if (l->weight_configured())
                    w_rtn = fake_quantize(w_fp.reshape(weight_matrix_shape(layer)), l->weight_spec()).view(w_fp.sizes());
                r.rtn_output_sqnr_db = sqnr_db(y, layer_output(layer, x_rtn, w_rtn));
            }
            for (const auto& [name, value] :
                 std::vector<std::pair<const char*, double>>{{"weight_mse", r.weight_mse},
                                                             {"output_mse", r.output_mse},
                                                             {"output_sqnr_db", r.output_sqnr_db},
                                                             {"rtn_output_sqnr_db", r.rtn_output_sqnr_db},
                                                             {"input_amax", r.input_amax},
                                                             {"input_clipped_fraction", r.input_clipped_fraction}})
                sink.layer_metric(r.layer, name, value);
            sink.progress(++measured, static_cast<int64_t>(active.size()), "measure");
            result.layers.push_back(r);
        }
    }
    // KV caches: the cached keys and values of the sampled tokens against their fake quantization.
    {
        c10::InferenceMode inference;
        for (const auto& kv : q.kv_caches()) {
            cancel.throw_if_cancelled();
            KvCachePtqReport r;
            r.attention = kv->name();
            r.quantizer = kv->settings().describe();
            r.key_amax = kv->key_amax();
            r.value_amax = kv->value_amax();
            r.key_scale = kv->key_scale();
            r.value_scale = kv->value_scale();
            r.tokens = kv_tokens[kv->name()];
            r.key_sqnr_db = r.value_sqnr_db = std::numeric_limits<double>::quiet_NaN();
            const auto& [k, v] = kv_samples[kv->name()];
            if (kv->configured() && k.defined() && k.numel() > 0) {
                r.key_sqnr_db = sqnr_db(k, kv->quantize_key(k));
                r.value_sqnr_db = sqnr_db(v, kv->quantize_value(v));
            }
            sink.layer_metric(r.attention, "kv/key_sqnr_db", r.key_sqnr_db);
            sink.layer_metric(r.attention, "kv/value_sqnr_db", r.value_sqnr_db);
            if (!r.key_amax.empty()) {
                sink.layer_metric(r.attention, "kv/key_amax", *std::max_element(r.key_amax.begin(), r.key_amax.end()));
                sink.layer_metric(r.attention, "kv/value_amax", *std::max_element(r.value_amax.begin(), r.value_amax.end()));
            }
            result.kv_cache.push_back(std::move(r));
        }
    }
    result.rotation = q.rotation_notes();
    result.size = q.size();
    result.kv_memory = q.kv_cache_memory();
    result.seconds = seconds_since(t0);
    return result;
}

}  // namespace ql
