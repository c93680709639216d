// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/sensitivity.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/core/errors.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/metrics.h"
#include "engine/eval/sentence_embedder.h"
#include "engine/models/model_device.h"
#include "engine/quant/fused_layers.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

struct Switches {
    std::vector<std::pair<bool, bool>> on;
    explicit Switches(const QuantizedModel& q) {
        for (const auto& l : q.layers()) on.emplace_back(l->weight_enabled(), l->input_enabled());
    }
    void restore(const QuantizedModel& q) const {
        for (size_t i = 0; i < on.size(); ++i) {
            q.layers()[i]->set_weight_enabled(on[i].first);
            q.layers()[i]->set_input_enabled(on[i].second);
        }
    }
};

// Mean NLL and KL against reference log-probabilities, over the scored positions of `data`.
struct Scores {
    double nll = 0, kl = 0;
};

QuantizerPatch patch_of(const QuantizerSettings& s) {
    QuantizerPatch p;
    p.enabled = s.enabled;
    if (!s.enabled) return p;
    p.format = s.options.format;
    if (!s.options.granularity.empty()) p.granularity = s.options.granularity;
    if (s.options.group_size > 0) p.group_size = s.options.group_size;
    if (s.options.axis != 0) p.axis = s.options.axis;
    if (s.options.asymmetric) p.asymmetric = true;
    if (s.options.double_quant) p.double_quant = true;
    if (s.options.mx_scale != "floor") p.mx_scale = s.options.mx_scale;
    if (s.dynamic) p.dynamic = true;
    if (s.calibrator != "max") p.calibrator = s.calibrator;
    if (s.calibrator == "percentile") p.percentile = s.percentile;
    return p;
}

}  // namespace

namespace {

double weight_bits_of(const LayerQuantizer& l, int64_t parameters) {
    return l.weight_configured() ? weight_storage_bits(l.weight_spec(), weight_matrix_shape(l.layer()))
                                 : 16.0 * static_cast<double>(parameters);
}

// Encoders: the cosine loss of the sentence embeddings against the FP ones.
SensitivityResult measure_encoder_sensitivity(QuantizedModel& q, const Dataset& data, int64_t batch_size, JobSink& sink,
                                              const CancellationToken& cancel) {
    if (!data.attention_mask.defined())
        throw UserError("sensitivity: data '" + data.name + "': an encoder reads sentences (a text file, one per line)");
    Model& model = q.model();
    const Switches saved(q);
    NullJobSink quiet;
    q.set_enabled(false);
    const at::Tensor fp = embed_sentences(model, data, batch_size, quiet, cancel);
    auto cosine_loss = [&]() {
        const at::Tensor e = embed_sentences(model, data, batch_size, quiet, cancel);
        return (1.0 - row_cosine(e, fp)).mean().item<double>();
    };
    SensitivityResult r;
    r.encoder = true;
    r.fp_loss = r.all_quantized_loss = r.all_quantized_kl = std::nan("");
    std::vector<LayerQuantizer*> targets;
    for (const auto& l : q.layers())
        if (l->weight_configured() || l->input_configured()) targets.push_back(l.get());
    int64_t done = 0;
    for (LayerQuantizer* l : targets) {
        q.set_enabled(false);
        l->set_enabled(true);
        LayerSensitivity ls;
        ls.layer = l->name();
        ls.loss_delta = ls.kl = std::nan("");
        ls.cosine_loss = ls.cost = cosine_loss();
        ls.parameters = l->layer().weight.numel();
        ls.weight_bits = weight_bits_of(*l, ls.parameters);
        sink.layer_metric(ls.layer, "sensitivity_cosine_loss", ls.cosine_loss);
        r.layers.push_back(ls);
        sink.progress(++done, static_cast<int64_t>(targets.size()), "sensitivity");
    }
    q.set_enabled(true);
    r.all_quantized_cosine_loss = cosine_loss();
    saved.restore(q);
    return r;
}

}  // namespace

SensitivityResult measure_sensitivity(QuantizedModel& q, const Dataset& data, int64_t batch_size, JobSink& sink,
                                      const CancellationToken& cancel) {
    if (data.size() == 0) throw UserError("sensitivity: data '" + data.name + "' holds no examples");
    if (q.model().is_encoder()) return measure_encoder_sensitivity(q, data, batch_size, sink, cancel);
    if (data.kind != Dataset::Kind::Tokens) throw UserError("sensitivity: needs token data (a language model)");
    Model& model = q.model();
    const Switches saved(q);
    const int64_t bs = std::max<int64_t>(1, batch_size);
    const int64_t n = data.size();
    c10::InferenceMode inference;

    // FP log-probabilities per batch, kept (the data is small) so each layer costs one forward.
    std::vector<at::Tensor> fp_logp;
    double scored = 0, fp_nll = 0;
    q.set_enabled(false);
    for (int64_t b = 0; b < n; b += bs) {
        cancel.throw_if_cancelled();
        const at::Tensor in = on_model_device(model, data.inputs.slice(0, b, std::min(n, b + bs)));
        const at::Tensor t = on_model_device(model, data.targets.slice(0, b, std::min(n, b + bs)));
        const at::Tensor logits = model.forward(model_input(model, in));
        // Double precision: per-layer KLs can be ~1e-9, below float32's rounding of the sum.
        fp_logp.push_back(at::log_softmax(logits.to(at::kDouble), -1));
        fp_nll += token_nll(logits, t).sum().item<double>();
        scored += scored_mask(t).sum().item<double>();
    }
    if (scored == 0) throw UserError("sensitivity: data '" + data.name + "' has no scored positions");
    auto score = [&]() {
        Scores s;
        size_t i = 0;
        for (int64_t b = 0; b < n; b += bs, ++i) {
            cancel.throw_if_cancelled();
            const at::Tensor in = on_model_device(model, data.inputs.slice(0, b, std::min(n, b + bs)));
            const at::Tensor t = on_model_device(model, data.targets.slice(0, b, std::min(n, b + bs)));
            const at::Tensor logits = model.forward(model_input(model, in)).to(at::kFloat);
            s.nll += token_nll(logits, t).sum().item<double>();
            const at::Tensor mask = scored_mask(t);
            // KL(FP || quantized) from the kept FP log-probabilities.
            const at::Tensor logq = at::log_softmax(logits.to(at::kDouble), -1);
            const at::Tensor kl = (fp_logp[i].exp() * (fp_logp[i] - logq)).sum(-1);
            s.kl += kl.masked_fill(~mask, 0).sum().item<double>();
        }
        s.nll /= scored;
        s.kl /= scored;
        return s;
    };

    SensitivityResult r;
    r.fp_loss = fp_nll / scored;
    std::vector<LayerQuantizer*> targets;
    for (const auto& l : q.layers())
        if (l->weight_configured() || l->input_configured()) targets.push_back(l.get());
    int64_t done = 0;
    for (LayerQuantizer* l : targets) {
        q.set_enabled(false);
        l->set_enabled(true);
        const Scores s = score();
        LayerSensitivity ls;
        ls.layer = l->name();
        ls.loss_delta = s.nll - r.fp_loss;
        ls.kl = ls.cost = s.kl;
        ls.cosine_loss = std::nan("");
        ls.parameters = l->layer().weight.numel();
        ls.weight_bits = weight_bits_of(*l, ls.parameters);
        sink.layer_metric(ls.layer, "sensitivity_kl", ls.kl);
        sink.layer_metric(ls.layer, "sensitivity_loss_delta", ls.loss_delta);
        r.layers.push_back(ls);
        sink.progress(++done, static_cast<int64_t>(targets.size()), "sensitivity");
    }
    q.set_enabled(true);
    const Scores all = score();
    r.all_quantized_loss = all.nll;
    r.all_quantized_kl = all.kl;
    r.all_quantized_cosine_loss = std::nan("");
    saved.restore(q);
    return r;
}

MixedPrecisionChoice choose_mixed_precision(const std::vector<MixedPrecisionCandidate>& candidates, double budget) {
    if (candidates.empty()) throw UserError("mixed precision: no candidate recipes");
    const size_t layers = candidates.front().layers.size();
    for (const auto& c : candidates) {
        if (c.layers.size() != layers) throw UserError("mixed precision: candidate " + c.name + " covers other layers");
        for (size_t i = 0; i < layers; ++i)
            if (c.layers[i].layer != candidates.front().layers[i].layer)
                throw UserError("mixed precision: candidate " + c.name + " covers other layers");
    }
    // The decisions: one per fused layer group (q/k/v, gate/up; fused_layers.h), one per other
    // layer. Consumers fuse those shards into one matmul with one scheme -- vLLM refuses shards of
    // different schemes, or a group partly in `ignore` -- so a group takes one candidate for all
    // its members, at the sum of their costs and bits.
    std::vector<std::string> names;
    for (const LayerSensitivity& l : candidates.front().layers) names.push_back(l.layer);
    std::vector<std::vector<size_t>> units;
    std::vector<bool> grouped(layers, false);
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < layers; ++i) index[names[i]] = i;
    std::map<size_t, std::vector<size_t>> group_at;  // first member's index -> the group's indices
    for (const std::vector<std::string>& g : fused_layer_groups(names)) {
        std::vector<size_t> members;
        for (const std::string& n : g) members.push_back(index.at(n));
        for (size_t m : members) grouped[m] = true;
        group_at[*std::min_element(members.begin(), members.end())] = members;
    }
    for (size_t i = 0; i < layers; ++i) {
        if (const auto it = group_at.find(i); it != group_at.end()) units.push_back(it->second);
        else if (!grouped[i]) units.push_back({i});
    }
    // Option k < candidates.size() = that candidate; k == size = keep BF16.
    const size_t none = candidates.size();
    auto bits_of = [&](size_t unit, size_t k) {
        double b = 0;
        for (size_t i : units[unit])
            b += k == none ? 16.0 * static_cast<double>(candidates[0].layers[i].parameters) : candidates[k].layers[i].weight_bits;
        return b;
    };
    auto kl_of = [&](size_t unit, size_t k) {
        double c = 0;
        for (size_t i : units[unit]) c += k == none ? 0.0 : std::max(0.0, candidates[k].layers[i].cost);
        return c;
    };
    double params = 0;
    for (size_t i = 0; i < layers; ++i) params += static_cast<double>(candidates[0].layers[i].parameters);
    std::vector<size_t> choice(units.size());  // per unit
    auto pick = [&](double lambda, std::vector<size_t>& chosen) {
        double bits = 0;
        for (size_t u = 0; u < units.size(); ++u) {
            size_t best = none;
            double best_cost = std::numeric_limits<double>::infinity();
            for (size_t k = 0; k <= none; ++k) {
                const double cost = kl_of(u, k) + lambda * bits_of(u, k);
                if (cost < best_cost || (cost == best_cost && bits_of(u, k) < bits_of(u, best))) {
                    best_cost = cost;
                    best = k;
                }
            }
            chosen[u] = best;
            bits += bits_of(u, best);
        }
        return bits / params;
    };
    double min_bits = 0;
    for (size_t u = 0; u < units.size(); ++u) {
        double b = bits_of(u, none);
        for (size_t k = 0; k < none; ++k) b = std::min(b, bits_of(u, k));
        min_bits += b;
    }
    if (min_bits / params > budget + 1e-12)
        throw UserError("mixed precision: the budget of " + std::to_string(budget) +
                        " bits per weight is below the cheapest choice (" + std::to_string(min_bits / params) + ")");
    // Bits fall as lambda grows: bisect for the smallest lambda within the budget.
    double lo = 0, hi = 1;
    while (pick(hi, choice) > budget) hi *= 4;
    if (pick(lo, choice) <= budget) hi = lo;
    for (int it = 0; it < 200 && hi > lo; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (pick(mid, choice) <= budget) hi = mid; else lo = mid;
    }
    MixedPrecisionChoice out;
    out.bits_per_weight = pick(hi, choice);
    out.recipe.name = "MIXED";
    out.recipe.description = "Automatic mixed precision: one candidate per layer (per fused group) minimising the summed layer KL under " +
                             std::to_string(budget) + " bits per weight";
    out.recipe.source = "mixed precision search";
    out.recipe.quant_cfg.push_back(RecipeEntry{"*", {}});
    out.recipe.quant_cfg.back().patch.enabled = false;
    std::vector<size_t> layer_choice(layers);
    for (size_t u = 0; u < units.size(); ++u) {
        for (size_t i : units[u]) layer_choice[i] = choice[u];
        out.predicted_kl += kl_of(u, choice[u]);
    }
    for (size_t i = 0; i < layers; ++i) {
        const std::string& layer = candidates[0].layers[i].layer;
        const size_t k = layer_choice[i];
        out.chosen.emplace_back(layer, k == none ? "none" : candidates[k].name);
        if (k == none) continue;
        const Recipe& r = *candidates[k].recipe;
        for (const char* which : {".weight_quantizer", ".input_quantizer"}) {
            const QuantizerSettings s = settings_for(r, layer + which);
            if (s.enabled) out.recipe.quant_cfg.push_back(RecipeEntry{layer + which, patch_of(s)});
        }
        // A fused group chosen from a recipe that shares its per-tensor scales keeps sharing them
        // (the NVFP4 / FP8 presets do: vLLM keeps one global / input scale per fused matmul).
        out.recipe.share_fused_scales = out.recipe.share_fused_scales || r.share_fused_scales;
        if (!candidates[k].recipe->calibration.samples) continue;
        out.recipe.calibration = candidates[k].recipe->calibration;
    }
    return out;
}

}  // namespace ql
