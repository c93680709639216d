// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/ptq_pipeline.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "engine/calib/amax_calibration.h"
#include "engine/calib/calibration_forward.h"
#include "engine/calib/calibration_observers.h"
#include "engine/calib/importance_collector.h"
#include "engine/calib/input_statistics.h"
#include "engine/calib/kv_cache_statistics.h"
#include "engine/core/errors.h"
#include "engine/core/process_memory.h"
#include "engine/eval/evaluator.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/jobs/ptq_progress.h"
#include "engine/models/model_device.h"
#include "engine/ptq/awq.h"
#include "engine/ptq/awq_fold.h"
#include "engine/ptq/gptq.h"
#include "engine/ptq/input_groups.h"
#include "engine/ptq/ptq_cost.h"
#include "engine/ptq/smoothquant.h"
#include "engine/ptq/weight_clipping.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace {

using Clock = std::chrono::steady_clock;
using Scope = std::vector<LayerQuantizer*>;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool configured(const LayerQuantizer& l) { return l.weight_configured() || l.input_configured(); }

// y = layer(x) with an explicit weight and input transform (FP reference, RTN baseline).
at::Tensor layer_output(const QuantizableLayer& layer, const at::Tensor& x, const at::Tensor& weight) {
    const at::Tensor w = weight.scalar_type() == x.scalar_type() ? weight : weight.to(x.scalar_type());
    if (const auto* conv = dynamic_cast<const Conv2dLayer*>(&layer))
        return at::conv2d(x, w, conv->bias, {conv->stride, conv->stride}, {conv->padding, conv->padding},
                          {conv->dilation, conv->dilation}, conv->groups);
    return at::linear(x, w, layer.bias);
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

// The weight as a float32 matrix (a stored BF16 weight converted for this use).
at::Tensor weight_matrix(const QuantizableLayer& layer) {
    return layer.weight.reshape(weight_matrix_shape(layer)).to(at::kFloat);
}

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
std::vector<std::vector<LayerQuantizer*>> gptq_blocks(const Scope& scope) {
    std::vector<std::vector<LayerQuantizer*>> blocks;
    std::string current;
    for (LayerQuantizer* l : scope) {
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
        blocks.back().push_back(l);
    }
    return blocks;
}

// The calibration data through the part being calibrated; keep = store the outputs as the
// activations of the next part.
using PartPass = std::function<void(bool keep)>;

// GPTQ's Hessians of one group of layers; layers that read one input (q, k, v; gate, up)
// without input quantizers share one accumulator.
struct GroupHessians {
    std::map<std::string, std::shared_ptr<HessianAccumulator>> by_layer;
};

class PtqRun {
public:
    PtqRun(QuantizedModel& q, const Dataset& data, const PtqOptions& options, JobSink& sink, const CancellationToken& cancel)
        : q_(q), model_(q.model()), data_(data), options_(options), sink_(sink), cancel_(cancel),
          alg_(q.recipe().algorithm) {
        smooth_ = alg_.method == "smoothquant";
        awq_ = alg_.method == "awq";
        gptq_ = alg_.method == "gptq";
        weights_change_inputs_ = smooth_ || awq_;
    }

    PtqResult run();

private:
    // Progress: whole model, per phase as before; layer by layer, one "ptq" phase in units of
    // estimated work (engine/ptq/ptq_cost.h), 1000 per part.
    void progress(int64_t done, int64_t total, const std::string& phase, double work = 0);
    void advance(double work);

    void prepare();
    void rotate();
    void statistics(const Scope& scope, const PartPass& pass, bool keep, GroupHessians* hessians);
    void smoothquant(const Scope& scope);
    void awq(const Scope& scope);
    void recalibrate(const Scope& scope, const PartPass& pass, bool keep);
    void clip_search(const Scope& scope);
    void gptq(const Scope& scope, const PartPass& pass, GroupHessians* collected);
    void measure(const Scope& scope);
    void kv_reports(const std::vector<KvCacheQuantizer*>& caches);
    void finish_part(PtqPart& part);

    void run_whole_model();
    void run_layer_by_layer();
    Scope scope_of(const std::vector<std::string>& layer_names) const;

    QuantizedModel& q_;
    Model& model_;
    const Dataset& data_;
    const PtqOptions& options_;
    JobSink& sink_;
    const CancellationToken& cancel_;
    const PtqAlgorithm& alg_;
    bool smooth_ = false, awq_ = false, gptq_ = false, weights_change_inputs_ = false;

    std::set<std::string> active_;
    std::map<std::string, LayerPtqReport> reports_;
    std::map<std::string, at::Tensor> fp_weight_;    // the weight before any algorithm changed it
    std::map<std::string, at::Tensor> fp_samples_;
    std::map<std::string, float> fp_amax_;           // max-calibrated static amax of the FP inputs (RTN baseline)
    std::map<std::string, at::Tensor> channel_amax_; // [in] per input channel (SmoothQuant)
    std::map<std::string, std::pair<at::Tensor, at::Tensor>> kv_samples_;
    std::map<std::string, int64_t> kv_tokens_;
    std::map<std::string, at::Tensor> fold_divisor_;  // the factor a layer's FP input is divided by after folding
    PtqResult result_;

    // Layer by layer.
    bool overall_ = false;
    double work_done_ = 0, work_total_ = 1;
    at::Tensor stream_;  // [samples, tokens, hidden]: the activations entering the current part
    int64_t measured_ = 0;
};

void PtqRun::progress(int64_t done, int64_t total, const std::string& phase, double work) {
    if (!overall_) {
        sink_.progress(done, total, phase);
        return;
    }
    advance(work);
}

void PtqRun::advance(double work) {
    work_done_ = std::min(work_total_, work_done_ + work);
    const int64_t total = kPtqProgressPerPart * result_.parts;
    sink_.progress(std::llround(static_cast<double>(total) * work_done_ / work_total_), total, "ptq");
}

Scope PtqRun::scope_of(const std::vector<std::string>& layer_names) const {
    const std::set<std::string> names(layer_names.begin(), layer_names.end());
    Scope s;
    for (const auto& l : q_.layers())
        if (names.count(l->name())) s.push_back(l.get());
    return s;
}

void PtqRun::prepare() {
    for (const auto& l : q_.layers()) {
        if (!configured(*l)) continue;
        active_.insert(l->name());
        LayerPtqReport r;
        r.layer = l->name();
        r.kind = layer_kind_name(l->layer().kind());
        r.weight_quantizer = describe(l->plan().weight, false);
        r.input_quantizer = describe(l->plan().input, true);
        r.method = l->weight_configured() ? (smooth_ || awq_ || gptq_ ? alg_.method : "rtn") : "-";
        r.parameters = l->layer().weight.numel();
        reports_[l->name()] = r;
    }
    if (active_.empty() && q_.kv_caches().empty())
        throw UserError(q_.recipe().source + ": the recipe quantizes no layer of this model");
}

void PtqRun::rotate() {
    if (!q_.recipe().rotation.enabled() || q_.rotated()) return;
    sink_.progress(0, 1, "rotate");
    const RotationReport r = rotate_model(q_);
    std::vector<std::string> notes = r.applied;
    for (const std::string& line : r.applied) sink_.log(LogLevel::Info, "rotation: " + line);
    for (const std::string& line : r.skipped) {
        sink_.log(LogLevel::Info, "rotation skipped: " + line);
        notes.push_back("skipped: " + line);
    }
    q_.mark_rotated(notes);
    sink_.progress(1, 1, "rotate");
}

// 1. Statistics of the inputs as the pass shows them (the FP layers: quantizers of the scope off).
void PtqRun::statistics(const Scope& scope, const PartPass& pass, bool keep, GroupHessians* hessians) {
    std::set<std::string> layers;
    for (LayerQuantizer* l : scope) {
        if (!active_.count(l->name())) continue;
        layers.insert(l->name());
        c10::InferenceMode normal(false);
        fp_weight_[l->name()] = l->layer().weight.detach().to(at::kFloat, false, /*copy=*/true);
    }
    std::set<std::string> sites;
    for (const auto& kv : q_.kv_caches()) sites.insert(kv->name());
    InputStatisticsOptions first;
    first.channel_amax = smooth_;
    first.sample_rows = options_.sample_rows;
    CalibrationObservers observers(q_, layers, first, data_, /*histogram=*/!weights_change_inputs_);
    if (hessians) {
        // GPTQ's Hessians in the same pass (the scope has no input quantizer: the Hessian is of
        // the input itself, what the statistics observers see).
        for (LayerQuantizer* l : scope) {
            auto it = hessians->by_layer.find(l->name());
            if (it == hessians->by_layer.end()) continue;
            LayerQuantizer::InputObserver stats = l->input_observer();
            std::shared_ptr<HessianAccumulator> h = it->second;
            // Shared accumulators are fed by their group's first member only.
            const bool feeds = [&] {
                for (LayerQuantizer* m : scope)
                    if (hessians->by_layer.count(m->name()) && hessians->by_layer.at(m->name()) == h) return m == l;
                return false;
            }();
            l->set_input_observer([stats, h, feeds](const at::Tensor& x) {
                if (stats) stats(x);
                if (feeds) h->add(x);
            });
        }
    }
    {
        KvCacheObservers kv_pass(q_, options_.sample_rows, data_);
        pass(keep);
        for (const auto& kv : q_.kv_caches()) {
            KvCacheStatistics& ks = kv_pass.at(kv->name());
            if (ks.tokens() == 0) continue;  // a site outside this part
            if (kv->needs_amax()) kv->set_amax(ks.key_amax(kv->amax_count()), ks.value_amax(kv->amax_count()));
            kv_samples_[kv->name()] = {ks.key_samples(), ks.value_samples()};
            kv_tokens_[kv->name()] = ks.tokens();
        }
    }
    for (LayerQuantizer* l : scope) {
        if (!layers.count(l->name())) continue;
        InputStatistics& s = observers.at(l->name());
        fp_samples_[l->name()] = s.samples();
        fp_amax_[l->name()] = static_cast<float>(s.amax());
        if (!weights_change_inputs_ && l->input_needs_amax()) l->set_input_amax(calibrated_amax(*l, s));
        if (smooth_) channel_amax_[l->name()] = s.channel_amax();
    }
    if (!weights_change_inputs_) q_.share_fused_input_amax();
}

// 2a. SmoothQuant.
void PtqRun::smoothquant(const Scope& scope) {
    std::vector<std::string> names;
    for (LayerQuantizer* l : scope)
        if (l->weight_configured() && l->input_configured()) names.push_back(l->name());
    const std::vector<InputGroup> groups = input_groups(model_, names);
    std::vector<std::pair<std::string, at::Tensor>> named = model_.named_parameters();
    int64_t done = 0;
    for (const InputGroup& g : groups) {
        cancel_.throw_if_cancelled();
        std::vector<at::Tensor> weights;
        at::Tensor act;
        for (const std::string& name : g.layers) {
            LayerQuantizer* l = q_.find(name);
            weights.push_back(weight_matrix(l->layer()));
            auto it = channel_amax_.find(name);
            if (it != channel_amax_.end() && it->second.defined()) act = it->second;
        }
        done += static_cast<int64_t>(g.layers.size());
        const double work = static_cast<double>(g.layers.size());
        if (!act.defined()) continue;  // only unquantized readers (cannot happen for listed layers)
        bool tied = false;
        for (const std::string& name : g.layers) tied = tied || shares_weight(model_, q_.find(name)->layer());
        if (tied) {
            sink_.log(LogLevel::Warning, "SmoothQuant skips " + g.layers.front() +
                                             ": its weight is tied to the embedding, which smoothing would change");
            continue;
        }
        if (g.norm.empty() && alg_.smoothquant_fold) {
            // "fold": only where a norm takes 1/s (SmoothQuant's smooth_ln_fcs, llm-compressor's
            // mappings), so that no pre_quant_scale is left for layouts without one.
            sink_.log(LogLevel::Info, "SmoothQuant (fold) leaves " + g.layers.front() + " unsmoothed: no norm precedes it");
            for (const std::string& name : g.layers) reports_[name].method = "rtn";
            continue;
        }
        const at::Tensor s = smoothquant_scales(act, weights, alg_.smoothquant_alpha);
        c10::NoGradGuard no_grad;
        for (const std::string& name : g.layers) {
            QuantizableLayer& layer = q_.find(name)->layer();
            model_.make_weight_float32(layer);  // a stored BF16 / mapped weight is edited as float32
            layer.weight.mul_(layer.kind() == LayerKind::Conv2d ? s.view({1, -1, 1, 1}) : s.unsqueeze(0));
        }
        if (!g.norm.empty()) {
            for (auto& [pname, tensor] : named) {
                if (pname == g.norm + ".weight" || pname == g.norm + ".bias") tensor.div_(s);
            }
            for (const std::string& name : g.layers) fold_divisor_[name] = s;
        } else {
            for (const std::string& name : g.layers) {
                LayerQuantizer* l = q_.find(name);
                const at::Tensor inv = 1.0 / s;
                l->set_pre_quant_scale(l->pre_quant_scale().defined() ? l->pre_quant_scale() * inv : inv);
            }
        }
        progress(done, static_cast<int64_t>(names.size()), "smoothquant", work);
    }
}

// 2b. AWQ, layer by layer on the FP inputs.
void PtqRun::awq(const Scope& scope) {
    std::vector<LayerQuantizer*> awq_layers;
    std::set<std::string> names;
    for (LayerQuantizer* l : scope)
        if (l->weight_configured()) {
            awq_layers.push_back(l);
            names.insert(l->name());
        }
    AwqOptions o;
    o.grid = alg_.awq_grid;
    o.clip_search = alg_.awq_clip;
    int64_t done = 0;
    if (alg_.awq_fold) {
        for (const FoldedAwqLayer& r : run_folded_awq(q_, fp_samples_, o, sink_, cancel_, names)) {
            reports_[r.layer].method = r.folded_into.empty() ? "rtn" : "awq";
            reports_[r.layer].awq_alpha = r.alpha;
            if (r.folded_into.empty())
                sink_.log(LogLevel::Info, "AWQ (fold) rounds " + r.layer + " to nearest: no preceding norm or Linear takes its scale");
        }
        if (overall_) advance(static_cast<double>(awq_layers.size()));
        awq_layers.clear();
    }
    for (LayerQuantizer* l : awq_layers) {
        cancel_.throw_if_cancelled();
        const auto tl = Clock::now();
        at::Tensor x = fp_samples_.at(l->name());
        if (l->layer().kind() == LayerKind::Conv2d || !x.defined() || shares_weight(model_, l->layer())) {
            sink_.log(LogLevel::Warning, "AWQ skips " + l->name() +
                                             " (Linear layers with their own weight only); it is rounded to nearest");
            reports_[l->name()].method = "rtn";
        } else {
            // The search scales this weight alone: its own amax (a fused group's shared amax
            // follows the scaled weights once they are written back).
            QuantSpec spec = l->weight_spec();
            if (l->shared_weight_amax()) spec.fixed_amax = std::nanf("");
            const AwqResult r = awq_search(weight_matrix(l->layer()), x, spec, o, cancel_);
            c10::NoGradGuard no_grad;
            model_.make_weight_float32(l->layer());
            l->layer().weight.copy_(r.weight.view(l->layer().weight.sizes()));
            l->set_pre_quant_scale(r.pre_quant_scale);
            reports_[l->name()].awq_alpha = r.best_alpha;
        }
        reports_[l->name()].seconds = seconds_since(tl);
        progress(++done, static_cast<int64_t>(awq_layers.size()), "awq", 1);
    }
}

// 3. Static input scales after the inputs changed.
void PtqRun::recalibrate(const Scope& scope, const PartPass& pass, bool keep) {
    std::set<std::string> layers;
    for (LayerQuantizer* l : scope)
        if (active_.count(l->name())) layers.insert(l->name());
    InputStatisticsOptions second;
    CalibrationObservers observers(q_, layers, second, data_, /*histogram=*/true);
    pass(keep);
    for (LayerQuantizer* l : scope)
        if (layers.count(l->name()) && l->input_needs_amax()) l->set_input_amax(calibrated_amax(*l, observers.at(l->name())));
    q_.share_fused_input_amax();
}

// 3b. Weight clipping search (calibrator mse / imatrix_mse), on the weights as step 2 left them.
void PtqRun::clip_search(const Scope& scope) {
    std::vector<LayerQuantizer*> searched;
    for (LayerQuantizer* l : scope) {
        const std::string& c = l->plan().weight.calibrator;
        if (l->weight_configured() && (c == "mse" || c == "imatrix_mse")) searched.push_back(l);
    }
    if (!searched.empty() && gptq_)
        throw UserError(q_.recipe().source + ": weight calibrator '" + searched.front()->plan().weight.calibrator +
                        "' and algorithm gptq both decide the weights; use one");
    int64_t done = 0;
    for (LayerQuantizer* l : searched) {
        cancel_.throw_if_cancelled();
        const auto tl = Clock::now();
        const bool weighted = l->plan().weight.calibrator == "imatrix_mse";
        std::vector<float> importance;
        if (weighted) {
            if (!options_.imatrix)
                throw UserError(q_.recipe().source + ": weight calibrator imatrix_mse needs an importance matrix (recipe "
                                "\"imatrix\": F or ptq --imatrix F; quantlab-cli imatrix makes one)");
            const std::string entry = importance_entry_name(model_.config(), l->name(), /*process_output=*/true);
            const ImportanceEntry* e = entry.empty() ? nullptr : options_.imatrix->find(entry);
            if (!e)
                throw UserError("imatrix: no entry '" + (entry.empty() ? l->name() + ".weight" : entry) + "' for layer " +
                                l->name() + (l->name() == "lm_head" ? " (collect it with quantlab-cli imatrix --process-output)" : ""));
            if (e->columns != input_features(l->layer()) || e->matrices() != 1)
                throw UserError("imatrix: entry '" + entry + "' has " + std::to_string(e->columns) + " columns, layer " +
                                l->name() + " reads " + std::to_string(input_features(l->layer())));
            importance = e->mean_sq();
        }
        if (l->layer().kind() != LayerKind::Linear) {
            sink_.log(LogLevel::Warning, "weight clipping search skips " + l->name() + " (Linear layers only)");
            continue;
        }
        if (l->weight_spec().info && l->weight_spec().info->family == "gguf") {
            // GGUF formats search their own scales; the importance goes into that search
            // (ggml's quant_weights), as llama-quantize --imatrix does.
            if (!weighted)
                throw UserError(q_.recipe().source + ": layer " + l->name() + ": weight calibrator mse does not apply to " +
                                l->weight_spec().info->name + " (its block scales come from llama.cpp's own search; "
                                "imatrix_mse gives that search the importance)");
            l->set_weight_importance(importance);
            reports_[l->name()].method = "imatrix";
            progress(++done, static_cast<int64_t>(searched.size()), "clip search", 1);
            continue;
        }
        const WeightClipping c = search_weight_clipping(weight_matrix(l->layer()), l->weight_spec(), importance);
        l->pin_quantized_weight(c.quantized.view(l->layer().weight.sizes()));
        LayerPtqReport& r = reports_[l->name()];
        r.method = l->plan().weight.calibrator;
        r.seconds += seconds_since(tl);
        sink_.layer_metric(l->name(), "clip_error_before", c.error_before);
        sink_.layer_metric(l->name(), "clip_error_after", c.error_after);
        progress(++done, static_cast<int64_t>(searched.size()), "clip search", 1);
    }
}

// Accumulators for every Linear of a GPTQ group; readers of one input without an input
// quantizer or pre_quant_scale share one (their Hessians are the same matrix).
GroupHessians make_group_hessians(const Model& model, const std::vector<LayerQuantizer*>& group) {
    GroupHessians h;
    std::vector<std::string> names;
    std::map<std::string, LayerQuantizer*> by_name;
    for (LayerQuantizer* l : group)
        if (l->layer().kind() == LayerKind::Linear) {
            names.push_back(l->name());
            by_name[l->name()] = l;
        }
    for (const InputGroup& g : input_groups(model, names)) {
        std::shared_ptr<HessianAccumulator> shared;
        for (const std::string& n : g.layers) {
            auto it = by_name.find(n);
            if (it == by_name.end()) continue;
            LayerQuantizer* l = it->second;
            const bool plain = !l->input_configured() && !l->pre_quant_scale().defined();
            if (plain && shared) {
                h.by_layer[n] = shared;
                continue;
            }
            auto acc = std::make_shared<HessianAccumulator>(input_features(l->layer()));
            if (plain) shared = acc;
            h.by_layer[n] = acc;
        }
    }
    return h;
}

// 4. GPTQ, block by block, each block seeing the earlier blocks quantized. `collected`: the
// Hessians of the scope's one group, already collected by the statistics pass.
void PtqRun::gptq(const Scope& scope, const PartPass& pass, GroupHessians* collected) {
    const auto blocks = gptq_blocks(scope);
    int64_t total = 0, done = 0;
    for (const auto& b : blocks) total += static_cast<int64_t>(b.size());
    GptqOptions o;
    o.block_size = alg_.gptq_block_size;
    o.damp_percent = alg_.gptq_damp_percent;
    o.act_order = alg_.gptq_act_order;
    for (const auto& block : blocks) {
        GroupHessians own;
        GroupHessians& hessians = collected ? *collected : own;
        if (!collected) {
            own = make_group_hessians(model_, block);
            std::set<HessianAccumulator*> fed;
            for (LayerQuantizer* l : block) {
                auto it = own.by_layer.find(l->name());
                if (it == own.by_layer.end()) continue;
                HessianAccumulator* hp = it->second.get();
                if (!fed.insert(hp).second) continue;  // a shared accumulator is fed once
                // The Hessian of what the matmul sees: the input after its own quantizer.
                l->set_input_observer([hp, l](const at::Tensor& x) {
                    hp->add(l->input_configured() ? fake_quantize(x, l->input_spec_for_forward()) : x);
                });
            }
            if (!own.by_layer.empty()) pass(false);
        }
        for (LayerQuantizer* l : block) {
            l->set_input_observer(nullptr);
            cancel_.throw_if_cancelled();
            const auto tl = Clock::now();
            auto it = hessians.by_layer.find(l->name());
            if (it == hessians.by_layer.end()) {
                sink_.log(LogLevel::Warning, "GPTQ skips " + l->name() + " (Linear layers only); it is rounded to nearest");
                reports_[l->name()].method = "rtn";
            } else {
                const GptqResult r = gptq_quantize(weight_matrix(l->layer()), it->second->hessian(), l->weight_spec(), o, cancel_);
                l->pin_quantized_weight(r.weight.view(l->layer().weight.sizes()));
                reports_[l->name()].gptq_proxy_loss = r.proxy_loss;
                if (r.dead_columns > 0)
                    sink_.log(LogLevel::Info, l->name() + ": " + std::to_string(r.dead_columns) +
                                                  " input channels were zero on all calibration data");
            }
            reports_[l->name()].seconds = seconds_since(tl);
            l->set_enabled(true);  // later blocks calibrate on this block quantized
            const double work = it == hessians.by_layer.end() ? 0 : gptq_layer_work(l->layer());
            progress(++done, total, "gptq", work);
        }
        // The Hessians are large (in^2 floats each): gone before the next group.
        for (auto& [name, h] : hessians.by_layer) h.reset();
    }
}

// 5. Per-layer error against the FP layer on FP inputs (quantizers of the scope on).
void PtqRun::measure(const Scope& scope) {
    c10::InferenceMode inference;
    for (LayerQuantizer* l : scope) {
        if (!active_.count(l->name())) continue;
        cancel_.throw_if_cancelled();
        l->set_enabled(true);
        LayerPtqReport& r = reports_[l->name()];
        const QuantizableLayer& layer = l->layer();
        const at::Tensor x = fp_samples_.at(l->name());
        if (l->weight_configured()) {
            const at::Tensor w = weight_matrix(layer);
            r.weight_mse = (w - l->quantized_weight().reshape(w.sizes())).pow(2).mean().item<double>();
            r.weight_bits = weight_storage_bits(l->weight_spec(), weight_matrix_shape(layer));
        }
        if (l->input_needs_amax()) r.input_amax = l->input_amax();
        if (x.defined() && x.numel() > 0) {
            const at::Tensor& w_fp = fp_weight_.at(l->name());
            const at::Tensor y = layer_output(layer, x, w_fp);
            auto it = fold_divisor_.find(l->name());
            const at::Tensor x_in = it == fold_divisor_.end() ? x : scale_features(layer, x, 1.0 / it->second);
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
                if (l->input_needs_amax()) in.fixed_amax = fp_amax_.at(l->name());
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
            sink_.layer_metric(r.layer, name, value);
        progress(++measured_, static_cast<int64_t>(active_.size()), "measure", 0);
        result_.layers.push_back(r);
        // What the report needed of this layer is done with.
        fp_samples_.erase(l->name());
        fp_weight_.erase(l->name());
    }
}

// KV caches: the cached keys and values of the sampled tokens against their fake quantization.
void PtqRun::kv_reports(const std::vector<KvCacheQuantizer*>& caches) {
    c10::InferenceMode inference;
    for (KvCacheQuantizer* kv : caches) {
        cancel_.throw_if_cancelled();
        KvCachePtqReport r;
        r.attention = kv->name();
        r.quantizer = kv->settings().describe();
        r.key_amax = kv->key_amax();
        r.value_amax = kv->value_amax();
        r.key_scale = kv->key_scale();
        r.value_scale = kv->value_scale();
        r.tokens = kv_tokens_[kv->name()];
        r.key_sqnr_db = r.value_sqnr_db = std::numeric_limits<double>::quiet_NaN();
        const auto& [k, v] = kv_samples_[kv->name()];
        if (kv->configured() && k.defined() && k.numel() > 0) {
            r.key_sqnr_db = sqnr_db(k, kv->quantize_key(k));
            r.value_sqnr_db = sqnr_db(v, kv->quantize_value(v));
        }
        sink_.layer_metric(r.attention, "kv/key_sqnr_db", r.key_sqnr_db);
        sink_.layer_metric(r.attention, "kv/value_sqnr_db", r.value_sqnr_db);
        if (!r.key_amax.empty()) {
            sink_.layer_metric(r.attention, "kv/key_amax", *std::max_element(r.key_amax.begin(), r.key_amax.end()));
            sink_.layer_metric(r.attention, "kv/value_amax", *std::max_element(r.value_amax.begin(), r.value_amax.end()));
        }
        result_.kv_cache.push_back(std::move(r));
        kv_samples_.erase(kv->name());
    }
}

void PtqRun::finish_part(PtqPart& part) {
    cancel_.throw_if_cancelled();
    if (options_.on_part_done) options_.on_part_done(part);
    if (!options_.release_parts) return;
    for (LayerQuantizer* l : part.layers) l->release_weight();
    model_.release_parameter_pages(part.parameters);
    return_free_heap();  // the next block starts from what is held, not from this block's high-water mark
}

void PtqRun::run_whole_model() {
    const PartPass pass = [&](bool) {
        run_calibration_forward(model_, data_, options_.batch_size, "calibrate", sink_, cancel_);
    };
    Scope all;
    for (const auto& l : q_.layers()) all.push_back(l.get());
    statistics(all, pass, false, nullptr);
    if (smooth_) smoothquant(all);
    if (awq_) awq(all);
    if (weights_change_inputs_) recalibrate(all, pass, false);
    clip_search(all);
    if (gptq_) gptq(all, pass, nullptr);
    q_.set_enabled(true);
    measure(all);
    std::vector<KvCacheQuantizer*> caches;
    for (const auto& kv : q_.kv_caches()) caches.push_back(kv.get());
    kv_reports(caches);
    PtqPart part;
    part.name = "model";
    for (const auto& [name, t] : model_.named_parameters()) part.parameters.push_back(name);
    part.layers = all;
    part.kv_caches = caches;
    finish_part(part);
}

void PtqRun::run_layer_by_layer() {
    overall_ = true;
    const int64_t blocks = model_.block_count();
    const int64_t n = data_.size();
    const int64_t bs = std::max<int64_t>(1, options_.batch_size);
    result_.layer_by_layer = true;
    result_.parts = blocks + 1;
    const std::vector<std::string> outside_layers = [&] {
        std::set<std::string> in_blocks;
        for (int64_t b = 0; b < blocks; ++b)
            for (const std::string& name : model_.block_layer_names(b)) in_blocks.insert(name);
        std::vector<std::string> out;
        for (const auto& l : q_.layers())
            if (!in_blocks.count(l->name())) out.push_back(l->name());
        return out;
    }();
    bool head_active = false;
    for (const std::string& name : outside_layers) head_active = head_active || active_.count(name);

    // Work estimate (engine/ptq/ptq_cost.h): embedding, every block's passes and algorithms.
    const int64_t tokens = data_.inputs.size(1);
    PtqWorkPlan plan = ptq_work_plan(q_, tokens, n);
    work_total_ = plan.total();
    work_done_ = 0;

    // The activations entering block 0, in the dtype the model stores its block weights in
    // (a BF16 checkpoint keeps BF16 activations between blocks, as llm-compressor's bf16 runs).
    const at::ScalarType stream_dtype = ptq_stream_dtype(model_);
    const PtqResume& resume = options_.resume;
    if (resume.parts_done > 0) {
        // A resumed run: the earlier run's parts are final; their activations and reports come back.
        if (resume.parts_done > blocks || !resume.activations.defined() || resume.activations.dim() != 3 ||
            resume.activations.size(0) != n || resume.activations.size(1) != data_.inputs.size(1))
            throw UserError("ptq: the saved activations to resume from do not fit this run (" +
                            std::to_string(resume.parts_done) + " parts done)");
        c10::InferenceMode inference;
        stream_ = resume.activations.to(model_device(model_), stream_dtype).contiguous();
        result_.layers = resume.layers;
        result_.kv_cache = resume.kv_cache;
        double skipped = plan.embed_per_sample * static_cast<double>(n);
        for (int64_t b = 0; b < resume.parts_done; ++b) skipped += plan.parts[static_cast<size_t>(b)].total(n);
        advance(skipped);
        sink_.log(LogLevel::Info, "resuming at block " + std::to_string(resume.parts_done + 1) + " of " +
                                      std::to_string(blocks) + " (the blocks before it were written by an earlier run)");
    }
    if (!stream_.defined()) {
        c10::InferenceMode inference;
        const at::Device device = model_device(model_);
        for (int64_t begin = 0; begin < n; begin += bs) {
            cancel_.throw_if_cancelled();
            const int64_t count = std::min(bs, n - begin);
            const at::Tensor ids = on_model_device(model_, model_input(model_, data_.inputs.slice(0, begin, begin + count)));
            const at::Tensor x = model_.embed(ids);
            if (!stream_.defined()) stream_ = at::empty({n, x.size(1), x.size(2)}, x.options().dtype(stream_dtype).device(device));
            stream_.slice(0, begin, begin + count).copy_(x);
            advance(plan.embed_per_sample * static_cast<double>(count));
        }
    }
    // The embedding table is read again only when the layers outside blocks are written.
    if (options_.release_parts) model_.release_parameter_pages(model_.unblocked_parameter_names());
    auto make_pass = [&](auto&& forward, double work_per_sample) -> PartPass {
        return [&, forward, work_per_sample](bool keep) {
            c10::InferenceMode inference;
            for (int64_t begin = 0; begin < n; begin += bs) {
                cancel_.throw_if_cancelled();
                const int64_t count = std::min(bs, n - begin);
                at::Tensor chunk = stream_.slice(0, begin, begin + count);
                const at::Tensor y = forward(chunk.to(at::kFloat));
                if (keep) chunk.copy_(y);
                advance(work_per_sample * static_cast<double>(count));
            }
        };
    };

    for (int64_t b = resume.parts_done; b <= blocks; ++b) {
        const auto t0 = Clock::now();
        const size_t reports_before = result_.layers.size(), kv_before = result_.kv_cache.size();
        const bool outside = b == blocks;
        PtqPart part;
        part.index = b;
        part.count = blocks + 1;
        part.name = outside ? "outside blocks" : model_.residual_stream().stages()[static_cast<size_t>(2 * b + 1)].block_name;
        part.parameters = outside ? model_.unblocked_parameter_names() : model_.block_parameter_names(b);
        const Scope scope = scope_of(outside ? outside_layers : model_.block_layer_names(b));
        part.layers = scope;
        for (const auto& kv : q_.kv_caches())
            if (!outside && kv->name().rfind(part.name + ".", 0) == 0) part.kv_caches.push_back(kv.get());
        const PtqBlockWork& w = plan.parts[static_cast<size_t>(b)];
        bool any_active = false;
        for (LayerQuantizer* l : scope) any_active = any_active || active_.count(l->name());
        if (outside && !head_active) {
            finish_part(part);
            advance(w.total(n));  // nothing to calibrate: its share of the work is done
            sink_.log(LogLevel::Info, part.name + " written");
            continue;
        }
        const PartPass pass = outside ? make_pass([&](const at::Tensor& x) { return model_.head(x); }, w.pass_per_sample)
                                      : make_pass([&, b](const at::Tensor& x) { return model_.run_block(b, x); }, w.pass_per_sample);
        for (LayerQuantizer* l : scope) l->set_enabled(false);
        if (!any_active && part.kv_caches.empty()) {
            // Nothing to calibrate here: the activations only pass through.
            if (!outside) pass(true);
        } else {
            // One pass for statistics and (RTN, calibration) the next block's input; GPTQ
            // collects its Hessians in it too when no layer of the block quantizes its input.
            bool inputs_quantized = false;
            for (LayerQuantizer* l : scope) inputs_quantized = inputs_quantized || l->input_configured();
            std::vector<LayerQuantizer*> gptq_scope;
            for (LayerQuantizer* l : scope)
                if (l->weight_configured()) gptq_scope.push_back(l);
            std::optional<GroupHessians> hessians;
            if (gptq_ && !inputs_quantized && !gptq_scope.empty()) hessians = make_group_hessians(model_, gptq_scope);
            const bool stats_keeps = !outside && !gptq_ && !weights_change_inputs_;
            statistics(scope, pass, stats_keeps, hessians ? &*hessians : nullptr);
            return_free_heap();  // the pass's forward temporaries, before the algorithms allocate
            if (smooth_) smoothquant(scope);
            if (awq_) awq(scope);
            if (weights_change_inputs_) recalibrate(scope, pass, !outside);
            clip_search(scope);
            if (gptq_) gptq(scope, pass, hessians ? &*hessians : nullptr);
            return_free_heap();  // GPTQ's solves, before the error report's outputs
            measure(scope);
            kv_reports(part.kv_caches);
            if (gptq_ && !outside) {
                // The next block's input: this block quantized (weights and inputs).
                for (LayerQuantizer* l : scope) l->set_enabled(true);
                pass(true);
            }
        }
        for (LayerQuantizer* l : scope) l->set_enabled(true);
        part.reports.assign(result_.layers.begin() + static_cast<std::ptrdiff_t>(reports_before), result_.layers.end());
        part.kv_reports.assign(result_.kv_cache.begin() + static_cast<std::ptrdiff_t>(kv_before), result_.kv_cache.end());
        if (!outside) part.next_activations = &stream_;
        finish_part(part);
        char line[160];
        std::snprintf(line, sizeof line, "%s (%lld of %lld) done in %.1f s", part.name.c_str(),
                      static_cast<long long>(b + 1), static_cast<long long>(blocks + 1), seconds_since(t0));
        sink_.log(LogLevel::Info, line);
    }
    advance(work_total_);  // the work plan is an estimate: progress ends at its total
    stream_ = at::Tensor();
}

PtqResult PtqRun::run() {
    const auto t0 = Clock::now();
    if (data_.size() == 0) throw UserError("calibration data '" + data_.name + "' holds no examples");
    q_.set_enabled(false);
    rotate();
    prepare();
    // Cancellation inside a forward as well: a block of a large model runs for seconds.
    const bool tap = !model_.residual_stream().tapped();
    std::optional<ScopedResidualTap> check;
    if (tap)
        check.emplace(model_.residual_stream(), [this](size_t, const at::Tensor& x) {
            cancel_.throw_if_cancelled();
            return x;
        });
    const bool by_blocks = options_.layer_by_layer && model_.block_count() > 0 && data_.kind == Dataset::Kind::Tokens &&
                           !data_.attention_mask.defined() && data_.inputs.dim() == 2;
    if (by_blocks)
        run_layer_by_layer();
    else
        run_whole_model();
    q_.set_enabled(true);
    // Reports in forward order, as the layers are listed.
    std::map<std::string, size_t> order;
    for (const auto& l : q_.layers()) order[l->name()] = order.size();
    std::stable_sort(result_.layers.begin(), result_.layers.end(),
                     [&](const LayerPtqReport& a, const LayerPtqReport& b) { return order[a.layer] < order[b.layer]; });
    result_.rotation = q_.rotation_notes();
    result_.size = q_.size();
    result_.kv_memory = q_.kv_cache_memory();
    result_.seconds = seconds_since(t0);
    return result_;
}

}  // namespace

PtqResult run_ptq_pipeline(QuantizedModel& q, const Dataset& calibration, const PtqOptions& options, JobSink& sink,
                           const CancellationToken& cancel) {
    PtqRun run(q, calibration, options, sink, cancel);
    return run.run();
}

}  // namespace ql
