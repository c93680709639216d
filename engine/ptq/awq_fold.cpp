// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/awq_fold.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <set>

#include "engine/ptq/input_groups.h"
#include "engine/quant/quant_plan.h"
#include "engine/core/string_suffix.h"

namespace ql {
namespace {

bool tied(const Model& model, const QuantizableLayer& layer) {
    for (const EmbeddingLayer* e : model.embedding_layers())
        if (e != &layer && e->weight.data_ptr() == layer.weight.data_ptr()) return true;
    return false;
}

// The Linear whose output rows feed `layer` channel for channel, or "".
std::string row_predecessor(const Model& model, const std::string& layer) {
    std::string p;
    if (ends_with(layer, ".self_attn.o_proj")) p = layer.substr(0, layer.size() - 6) + "v_proj";
    else if (ends_with(layer, ".mlp.down_proj")) p = layer.substr(0, layer.size() - 9) + "up_proj";
    else if (ends_with(layer, ".attention.output.dense")) p = layer.substr(0, layer.size() - 13) + ".self.value";
    if (p.empty()) return "";
    const QuantizableLayer* pl = model.find_layer(p);
    const QuantizableLayer* l = model.find_layer(layer);
    if (!pl || !l || pl->kind() != LayerKind::Linear || l->kind() != LayerKind::Linear) return "";
    // Grouped-query attention repeats each V head for several query heads: one scale per o_proj
    // input channel is then not one per v_proj output row.
    if (pl->weight.size(0) != weight_matrix_shape(*l)[1]) return "";
    return p;
}

}  // namespace

std::vector<FoldedAwqLayer> run_folded_awq(QuantizedModel& q, const std::map<std::string, at::Tensor>& fp_samples,
                                           const AwqOptions& options, JobSink& sink, const CancellationToken& cancel,
                                           const std::set<std::string>& scope) {
    Model& model = q.model();
    std::vector<std::string> names;
    for (const auto& l : q.layers())
        if (l->weight_configured() && l->layer().kind() == LayerKind::Linear && (scope.empty() || scope.count(l->name())))
            names.push_back(l->name());
    std::vector<FoldedAwqLayer> out;
    std::set<std::string> done;
    std::map<std::string, at::Tensor*> params;
    std::vector<std::pair<std::string, at::Tensor>> named = model.named_parameters();
    for (auto& [n, t] : named) params[n] = &t;
    auto search = [&](const std::vector<LayerQuantizer*>& members, const std::string& into, bool into_norm) {
        cancel.throw_if_cancelled();
        const auto it = fp_samples.find(members.front()->name());
        if (it == fp_samples.end() || !it->second.defined()) return;
        std::vector<at::Tensor> ws;
        for (LayerQuantizer* l : members) ws.push_back(l->layer().weight.reshape(weight_matrix_shape(l->layer())).to(at::kFloat));
        const at::Tensor stacked = at::cat(ws, 0);
        QuantSpec spec = members.front()->weight_spec();
        spec.fixed_amax = std::nanf("");  // the stacked weight's own amax (= a fused group's shared one)
        const AwqResult r = awq_search(stacked, it->second, spec, options, cancel);
        c10::NoGradGuard no_grad;
        for (LayerQuantizer* l : members) model.make_weight_float32(l->layer());
        if (!into_norm) model.make_weight_float32(*model.find_layer(into));
        int64_t row = 0;
        for (LayerQuantizer* l : members) {
            const int64_t n = l->layer().weight.size(0);
            l->layer().weight.copy_(r.weight.slice(0, row, row + n).view(l->layer().weight.sizes()));
            row += n;
        }
        const at::Tensor pqs = r.pre_quant_scale.to(at::kFloat);
        // The preceding op's output times pre_quant_scale = the input AWQ wants.
        if (into_norm) {
            for (const char* suffix : {".weight", ".bias"})
                if (params.count(into + suffix)) params.at(into + suffix)->mul_(pqs);
        } else {
            QuantizableLayer& p = *model.find_layer(into);
            p.weight.mul_(pqs.unsqueeze(1));
            if (p.bias.defined()) p.bias.mul_(pqs);
        }
        for (LayerQuantizer* l : members) out.push_back({l->name(), into, r.kept_rtn ? -1.0 : r.best_alpha});
    };
    int64_t progress = 0;
    const int64_t total = static_cast<int64_t>(names.size());
    for (const InputGroup& g : input_groups(model, names)) {
        std::vector<LayerQuantizer*> members;
        bool ok = !g.norm.empty();
        for (const std::string& n : g.layers) {
            LayerQuantizer* l = q.find(n);
            if (!l || !l->weight_configured() || tied(model, l->layer()) ||
                l->plan().weight_spec.info != q.find(g.layers.front())->plan().weight_spec.info)
                ok = false;
            else
                members.push_back(l);
        }
        if (ok && !members.empty()) {
            search(members, g.norm, true);
            for (const std::string& n : g.layers) done.insert(n);
        }
        progress += static_cast<int64_t>(g.layers.size());
        sink.progress(std::min(progress, total), total, "awq");
    }
    for (const std::string& n : names) {
        if (done.count(n)) continue;
        LayerQuantizer* l = q.find(n);
        const std::string p = tied(model, l->layer()) ? "" : row_predecessor(model, n);
        if (p.empty()) {
            out.push_back({n, "", -1.0});
            continue;
        }
        search({l}, p, false);
    }
    return out;
}

}  // namespace ql
