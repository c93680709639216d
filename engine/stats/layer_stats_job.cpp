// SPDX-License-Identifier: GPL-3.0-or-later
// The model-level statistics behind run_layer_stats (engine/stats/layer_statistics.h): calibration
// batches with every quantizer off to sample each layer's FP inputs (the inputs PTQ's error
// report uses, engine/ptq/ptq_pipeline.h), then per layer: weight statistics, activation
// statistics, and every format's fit.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "engine/core/errors.h"
#include "engine/calib/calibration_forward.h"
#include "engine/calib/calibration_observers.h"
#include "engine/calib/kv_cache_statistics.h"
#include "engine/loading/model_source.h"
#include "engine/core/format_catalog.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/quantized_model_device.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/gguf_kernel_types.h"
#include "engine/stats/format_fit.h"
#include "engine/stats/kv_cache_stats.h"
#include "engine/stats/layer_statistics.h"
#include "engine/stats/llm_int8_decomposition.h"
#include "engine/core/not_a_number.h"

namespace ql {
namespace {


at::Tensor layer_output(const QuantizableLayer& layer, const at::Tensor& x, const at::Tensor& weight) {
    if (const auto* conv = dynamic_cast<const Conv2dLayer*>(&layer))
        return at::conv2d(x, weight, conv->bias, {conv->stride, conv->stride}, {conv->padding, conv->padding},
                          {conv->dilation, conv->dilation}, conv->groups);
    return at::linear(x, weight, layer.bias);
}

double sum_squares(const at::Tensor& t) { return t.to(at::kDouble).pow(2).sum().item<double>(); }

// Input rows as [rows, features]: Linear [n, in] as is, Conv2d [n, C, H, W] channels last.
at::Tensor feature_rows(const QuantizableLayer& layer, const at::Tensor& x) {
    if (layer.kind() == LayerKind::Conv2d) return x.permute({0, 2, 3, 1}).reshape({-1, x.size(1)}).contiguous();
    return x.reshape({-1, x.size(-1)}).contiguous();
}

// x quantized by `spec` along its features (Conv2d: channels last, as LayerQuantizer does, and
// back to contiguous NCHW so the convolution runs the same kernel as the quantized layer's).
at::Tensor quantize_input(const QuantizableLayer& layer, const at::Tensor& x, const QuantSpec& spec) {
    if (layer.kind() == LayerKind::Conv2d)
        return fake_quantize(x.permute({0, 2, 3, 1}).contiguous(), spec).permute({0, 3, 1, 2}).contiguous();
    return fake_quantize(x, spec);
}

std::string fs_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> layer_names(const Model& model) {
    std::vector<std::string> names;
    for (const QuantizableLayer* l : model.quantizable_layers())
        if (l->kind() != LayerKind::Embedding) names.push_back(l->name);
    return names;
}

}  // namespace

std::vector<LayerStatistics> measure_layer_statistics(QuantizedModel& quantized, const Dataset* calibration,
                                                     const LayerStatsOptions& options, JobSink& sink,
                                                     const CancellationToken& cancel) {
    QuantizedModel* q = &quantized;
    const std::vector<std::string> all = layer_names(q->model());
    // Names of KV-cache records ("<attention>.k_cache[.head<h>]") are not layers.
    std::vector<std::string> chosen, kv_wanted;
    for (const std::string& name : options.layers) {
        const bool kv_name = name.find(".k_cache") != std::string::npos || name.find(".v_cache") != std::string::npos;
        (kv_name ? kv_wanted : chosen).push_back(name);
    }
    if (options.layers.empty()) chosen = all;
    for (const std::string& name : chosen)
        if (!q->find(name)) {
            std::string some;
            for (size_t i = 0; i < all.size() && i < 6; ++i) some += (i ? ", " : "") + all[i];
            throw UserError("stats: the model has no Linear / Conv2d layer '" + name + "' (layers: " + some +
                            (all.size() > 6 ? ", ..." : "") + ")");
        }
    for (const std::string& f : options.formats) format_info(f);
    if (options.top_k < 0) throw UserError("stats: top_k must not be negative");
    if (options.bins < 1) throw UserError("stats: bins must be at least 1");

    // Activations: FP inputs of every chosen layer.
    std::map<std::string, at::Tensor> samples, channel_amax;
    const bool with_activations = calibration != nullptr;
    std::unique_ptr<KvCacheObservers> kv_observed;
    if (with_activations) {
        const Dataset& data = *calibration;
        if (data.size() == 0) throw UserError("stats: calibration data '" + data.name + "' holds no examples");
        cancel.throw_if_cancelled();
        InputStatisticsOptions so;
        so.channel_amax = true;
        so.sample_rows = options.sample_rows;
        // FP inputs, as PTQ's error report measures them; a checkpoint's switches are restored after.
        std::vector<std::pair<bool, bool>> switches;
        for (const auto& l : q->layers()) switches.emplace_back(l->weight_enabled(), l->input_enabled());
        std::vector<bool> kv_switches;
        for (const auto& kv : q->kv_caches()) kv_switches.push_back(kv->enabled());
        q->set_enabled(false);
        {
            CalibrationObservers pass(*q, std::set<std::string>(chosen.begin(), chosen.end()), so, data, false);
            kv_observed = std::make_unique<KvCacheObservers>(*q, options.sample_rows, data);
            run_calibration_forward(q->model(), data, options.batch_size, "calibrate", sink, cancel);
            for (const auto& kv : q->kv_caches()) {
                kv->set_observer(nullptr);  // the samples stay in kv_observed
                if (kv->needs_amax() && kv->key_amax().empty()) {
                    KvCacheStatistics& ks = kv_observed->at(kv->name());
                    kv->set_amax(ks.key_amax(kv->amax_count()), ks.value_amax(kv->amax_count()));
                }
            }
            for (const std::string& name : chosen) {
                samples[name] = pass.at(name).samples();
                channel_amax[name] = pass.at(name).channel_amax();
            }
        }
        for (size_t i = 0; i < switches.size(); ++i) {
            q->layers()[i]->set_weight_enabled(switches[i].first);
            q->layers()[i]->set_input_enabled(switches[i].second);
        }
        for (size_t i = 0; i < kv_switches.size(); ++i) q->kv_caches()[i]->set_enabled(kv_switches[i]);
        // The forward ran where the model is (--device); the statistics below are host code on
        // CPU copies, the model's included.
        for (auto* m : {&samples, &channel_amax})
            for (auto& [name, t] : *m)
                if (t.defined()) t = t.to(at::kCPU);
        move_quantized_model(*q, at::Device(at::kCPU));
    }

    c10::InferenceMode inference;
    std::vector<LayerStatistics> out;
    const int64_t total = static_cast<int64_t>(chosen.size());
    int64_t done = 0;
    for (const std::string& name : chosen) {
        cancel.throw_if_cancelled();
        LayerQuantizer& lq = *q->find(name);
        const QuantizableLayer& layer = lq.layer();
        LayerStatistics ls;
        ls.layer = name;
        ls.kind = layer_kind_name(layer.kind());
        ls.weight_shape = layer.weight.sizes().vec();
        const std::vector<int64_t> mshape = weight_matrix_shape(layer);
        const at::Tensor w = layer.weight.detach().reshape(mshape).to(at::kFloat).contiguous();
        const int64_t rows = mshape[0], cols = mshape[1];
        ls.weight = tensor_statistics(w.data_ptr<float>(), rows, cols, options.top_k, options.bins);
        sink.layer_metric(name, "weight_amax", ls.weight.amax);
        sink.layer_metric(name, "weight_kurtosis", ls.weight.kurtosis);
        sink.progress(done + 1, total, "weights");

        at::Tensor x, xrows;
        if (with_activations) {
            x = samples.at(name);
            if (x.defined() && x.numel() > 0) {
                xrows = feature_rows(layer, x.to(at::kFloat));
                ls.has_activation = true;
                ls.activation_rows = xrows.size(0);
                ls.activation = tensor_statistics(xrows.data_ptr<float>(), xrows.size(0), xrows.size(1), options.top_k,
                                                  options.bins, /*channels_in_columns=*/true);
                // The per-feature amax of the whole pass, not only of the sampled rows.
                const at::Tensor ca = channel_amax.at(name);
                if (ca.defined()) {
                    const at::Tensor c = ca.to(at::kDouble).contiguous();
                    ls.activation.channel_absmax.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
                }
                sink.layer_metric(name, "activation_kurtosis", ls.activation.kurtosis);
                ls.llm_int8 = llm_int8_decomposition(xrows.data_ptr<float>(), xrows.size(0), xrows.size(1));
                if (lq.input_needs_amax() && std::isfinite(lq.input_amax()) && lq.input_amax() > 0) {
                    ls.input_amax = lq.input_amax();
                    ls.input_clipped_fraction = xrows.abs().gt(ls.input_amax).to(at::kDouble).mean().item<double>();
                }
            }
        }
        sink.progress(done + 1, total, "activations");

        // Fits: the chosen format with the recipe's settings first, then the others.
        struct Candidate {
            QuantSpec weight, input;
            std::string error, format;
            bool input_calibrated = false;
        };
        std::vector<Candidate> candidates;
        // A GGUF file's layer: its own type is the chosen format (no quantizer installed).
        const GgufParameterSource* file_src = options.gguf ? options.gguf->weight_of(name) : nullptr;
        const std::string file_format = file_src ? gguf_format_name(file_src->tensor->type) : "";
        at::Tensor ref_w;  // the reference model's weight [rows, cols], when one is given
        if (options.reference) {
            const QuantizableLayer* r = options.reference->find_layer(name);
            if (!r || r->weight.sizes() != layer.weight.sizes())
                throw UserError("stats: the reference model has no layer " + name + " of shape " + shape_string(ls.weight_shape));
            ref_w = r->weight.detach().reshape(mshape).to(at::kFloat).contiguous();
        }
        if (!file_format.empty()) {
            ls.chosen_format = file_format;
            Candidate c;
            c.format = file_format;
            c.weight = resolve_spec(default_weight_options(file_format, cols), mshape);
            c.input.info = nullptr;  // llama.cpp quantizes activations itself
            candidates.push_back(c);
        } else if (lq.weight_configured()) {
            ls.chosen_format = lq.plan().weight.options.format;
            Candidate c;
            c.format = ls.chosen_format;
            c.weight = lq.weight_spec();
            if (lq.input_configured()) {
                c.input = lq.plan().input_spec;
                if (lq.input_needs_amax() && std::isfinite(lq.input_amax())) {
                    c.input.fixed_amax = lq.input_amax();
                    c.input_calibrated = true;
                }
            } else {
                c.input.info = nullptr;
            }
            candidates.push_back(c);
        }
        for (const std::string& f : options.formats) {
            if (f == ls.chosen_format) continue;
            Candidate c;
            c.format = f;
            try {
                c.weight = resolve_spec(default_weight_options(f, cols), mshape);
                c.input = resolve_spec(default_input_options(f), {1, input_features(layer)});
            } catch (const UserError& e) {
                c.error = e.what();
            }
            candidates.push_back(c);
        }
        const int64_t chosen_block = !file_format.empty() ? candidates.front().weight.block : lq.weight_configured() ? lq.weight_spec().block : 0;
        const int64_t first = std::min<int64_t>(cols, chosen_block > 0 ? chosen_block : 16);
        ls.first_block.assign(w.data_ptr<float>(), w.data_ptr<float>() + first);

        // The reference output: the reference model's weight on the same inputs when there is one.
        const at::Tensor y = ls.has_activation ? layer_output(layer, x, ref_w.defined() ? ref_w.view(layer.weight.sizes()) : layer.weight)
                                               : at::Tensor();
        const double signal = y.defined() ? sum_squares(y) : 0.0;
        for (const Candidate& c : candidates) {
            FormatFit fit;
            std::vector<float> qw;
            std::string error = c.error;
            const bool is_file_fit = !file_format.empty() && &c == &candidates.front();
            // Other formats fit the reference's FP weight when there is one (what they would make
            // of the original model), else the weight the model holds.
            const at::Tensor& fit_w = ref_w.defined() && !is_file_fit ? ref_w : w;
            if (error.empty()) {
                try {
                    fit = fit_weight(fit_w.data_ptr<float>(), rows, cols, c.weight, options.bins, qw);
                } catch (const UserError& e) {
                    error = e.what();
                }
            }
            if (!error.empty()) {
                fit = FormatFit{};
                fit.format = c.format;
                fit.error = error;
                fit.clipped_fraction = fit.weight_mse = fit.weight_sqnr_db = kNaN;
                fit.output_sqnr_db = fit.wa_output_sqnr_db = fit.input_clipped_fraction = kNaN;
            } else {
                const bool is_chosen = &c == &candidates.front() && lq.weight_configured();
                if (is_chosen) fit.settings = describe(lq.plan().weight, false);
                if (is_file_fit) {
                    // The file's own quantization: its values as they are, its stored block scales,
                    // errors only against a reference.
                    const GgufTensorInfo& t = *file_src->tensor;
                    fit.settings = std::string(ggml_type_name(t.type)) + " from " + fs_name(options.gguf->file->path()) +
                                   (ref_w.defined() ? ", errors against the reference model" : " (no reference model: no error)");
                    std::copy(w.data_ptr<float>(), w.data_ptr<float>() + rows * cols, qw.begin());
                    const std::vector<float> scales = gguf_block_scales(options.gguf->file->tensor_data(t), t.type, t.numel());
                    if (!scales.empty()) {
                        fit.block_scales.assign(scales.begin(), scales.end());
                        fit.block_scale_stride = 1;
                        fit.block_count = static_cast<int64_t>(scales.size());
                    }
                    if (ref_w.defined()) {
                        double sig = 0, err = 0;
                        const float* rp = ref_w.data_ptr<float>();
                        for (int64_t i = 0; i < rows * cols; ++i) {
                            const double d = static_cast<double>(rp[i]) - qw[static_cast<size_t>(i)];
                            sig += static_cast<double>(rp[i]) * rp[i];
                            err += d * d;
                        }
                        fit.weight_mse = rows * cols > 0 ? err / static_cast<double>(rows * cols) : 0.0;
                        fit.weight_sqnr_db = sqnr_db(sig, err);
                    } else {
                        fit.weight_mse = fit.weight_sqnr_db = kNaN;
                    }
                }
                if (is_chosen && options.checkpoint) {
                    // A checkpoint's weight as its forward uses it (GPTQ's pinned result, learned
                    // LSQ steps): errors of the model as saved, scales and clipping of its weight.
                    const at::Tensor pinned = lq.quantized_weight().detach().reshape(mshape).to(at::kFloat).contiguous();
                    std::copy(pinned.data_ptr<float>(), pinned.data_ptr<float>() + rows * cols, qw.begin());
                    double sig = 0, err = 0;
                    const float* wp = w.data_ptr<float>();
                    for (int64_t i = 0; i < rows * cols; ++i) {
                        if (!std::isfinite(wp[i])) continue;
                        const double d = static_cast<double>(wp[i]) - qw[static_cast<size_t>(i)];
                        sig += static_cast<double>(wp[i]) * wp[i];
                        err += d * d;
                    }
                    fit.weight_mse = (rows * cols) > 0 ? err / static_cast<double>(rows * cols) : 0.0;
                    fit.weight_sqnr_db = sqnr_db(sig, err);
                }
                if (y.defined() && is_file_fit && !ref_w.defined()) {
                    fit.output_sqnr_db = fit.wa_output_sqnr_db = kNaN;  // the file's output has nothing to compare with
                    fit.input_clipped_fraction = 0;
                } else if (y.defined()) {
                    const at::Tensor qt = at::from_blob(qw.data(), layer.weight.sizes(), at::kFloat);
                    fit.output_sqnr_db = sqnr_db(signal, sum_squares(y - layer_output(layer, x, qt)));
                    if (c.input.info) {
                        const at::Tensor xq = quantize_input(layer, x, c.input);
                        fit.wa_output_sqnr_db = sqnr_db(signal, sum_squares(y - layer_output(layer, xq, qt)));
                        fit.input_clipped_fraction = clipped_fraction(xrows.data_ptr<float>(), {xrows.size(0), xrows.size(1)}, c.input);
                    } else {
                        fit.wa_output_sqnr_db = fit.output_sqnr_db;  // the recipe leaves inputs in FP
                        fit.input_clipped_fraction = 0;
                    }
                }
            }
            sink.layer_metric(name, "sqnr_db/" + fit.format, fit.output_sqnr_db);
            sink.layer_metric(name, "weight_sqnr_db/" + fit.format, fit.weight_sqnr_db);
            sink.layer_metric(name, "clipped_fraction/" + fit.format, fit.clipped_fraction);
            ls.fits.push_back(std::move(fit));
        }
        if (!ls.chosen_format.empty()) {
            sink.layer_metric(name, "clipped_fraction", ls.fits.front().clipped_fraction);
            sink.layer_metric(name, "output_sqnr_db", ls.fits.front().output_sqnr_db);
        }
        sink.progress(++done, total, "formats");
        out.push_back(std::move(ls));
    }
    if (kv_observed && (options.layers.empty() || !kv_wanted.empty())) {
        std::vector<LayerStatistics> kv = kv_cache_statistics(*q, *kv_observed, options.kv_per_head, kv_wanted, options.top_k, options.bins);
        for (LayerStatistics& ls : kv) {
            for (const FormatFit& f : ls.fits) sink.layer_metric(ls.layer, "weight_sqnr_db/" + f.format, f.weight_sqnr_db);
            sink.layer_metric(ls.layer, "weight_kurtosis", ls.weight.kurtosis);
            out.push_back(std::move(ls));
        }
    }
    return out;
}

}  // namespace ql
