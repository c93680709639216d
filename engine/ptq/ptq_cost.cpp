// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/ptq_cost.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/ptq/input_groups.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

double linear_flops_per_token(const QuantizableLayer& l) {
    const std::vector<int64_t> s = weight_matrix_shape(l);
    return 2.0 * static_cast<double>(s[0]) * static_cast<double>(s[1]);
}

}  // namespace

double PtqWorkPlan::total() const {
    double t = embed_per_sample * static_cast<double>(samples);
    for (const PtqBlockWork& p : parts) t += p.total(samples);
    return t;
}

double gptq_layer_work(const QuantizableLayer& layer) {
    const std::vector<int64_t> s = weight_matrix_shape(layer);
    const double out = static_cast<double>(s[0]), in = static_cast<double>(s[1]);
    return 1.5 * in * in * in + 2.0 * out * in * in;
}

at::ScalarType ptq_stream_dtype(const Model& model) {
    for (const LinearLayer* l : model.linear_layers()) {
        const at::ScalarType t = l->weight.scalar_type();
        return t == at::kBFloat16 || t == at::kHalf ? at::kBFloat16 : at::kFloat;
    }
    return at::kFloat;
}

PtqWorkPlan ptq_work_plan(const QuantizedModel& q, int64_t tokens, int64_t samples, int64_t sample_rows) {
    const Model& model = q.model();
    const ModelConfig& c = model.config();
    const PtqAlgorithm& alg = q.recipe().algorithm;
    const bool gptq = alg.method == "gptq", smooth = alg.method == "smoothquant", awq = alg.method == "awq";
    const double t = static_cast<double>(tokens);
    const double rows = static_cast<double>(std::min<int64_t>(sample_rows, tokens * samples));
    PtqWorkPlan plan;
    plan.samples = samples;
    plan.tokens = tokens;
    plan.embed_per_sample = t * static_cast<double>(c.hidden_size);
    const int64_t blocks = model.block_count();
    std::set<std::string> in_blocks;
    auto part_work = [&](const std::vector<std::string>& layer_names, bool block) {
        PtqBlockWork w;
        double forward = 0, hessians = 0;
        bool active = false, inputs_quantized = false;
        std::vector<std::string> gptq_layers;
        for (const std::string& name : layer_names) {
            const LayerQuantizer* l = q.find(name);
            if (!l) continue;
            const QuantizableLayer& layer = l->layer();
            forward += t * linear_flops_per_token(layer);
            const bool configured = l->weight_configured() || l->input_configured();
            active = active || configured;
            inputs_quantized = inputs_quantized || l->input_configured();
            if (!configured) continue;
            const double per_token = linear_flops_per_token(layer);
            w.measure += 3.0 * rows * per_token;
            if (!l->weight_configured()) continue;
            if (gptq && layer.kind() == LayerKind::Linear) {
                w.algorithms += gptq_layer_work(layer);
                gptq_layers.push_back(name);
            }
            if (awq) w.algorithms += static_cast<double>(alg.awq_grid + (alg.awq_clip ? 20 : 0)) * rows * per_token;
        }
        if (block) forward += 4.0 * static_cast<double>(c.num_heads * c.head_dim) * t * t;
        // Distinct Hessians: readers of one input share one.
        for (const InputGroup& g : input_groups(model, gptq_layers)) {
            const LayerQuantizer* l = q.find(g.layers.front());
            const double in = static_cast<double>(input_features(l->layer()));
            hessians += 2.0 * t * in * in * (inputs_quantized ? static_cast<double>(g.layers.size()) : 1.0);
        }
        if (!active && block) {
            w.passes = 1;
            w.pass_per_sample = forward;
        } else if (!active) {
            w.passes = 0;
        } else {
            // statistics (+ next input) | + recalibration | + Hessians (own pass when inputs are
            // quantized) and the quantized block's output
            w.passes = 1 + ((smooth || awq) ? 1 : 0) + (gptq ? (inputs_quantized ? 2 : 1) : 0);
            if (!block && gptq) w.passes -= 1;  // no next input after the last part
            if (!block && (smooth || awq)) w.passes = 2;
            w.pass_per_sample = forward + hessians / static_cast<double>(std::max<int64_t>(1, w.passes));
        }
        return w;
    };
    for (int64_t b = 0; b < blocks; ++b) {
        const std::vector<std::string> names = model.block_layer_names(b);
        in_blocks.insert(names.begin(), names.end());
        plan.parts.push_back(part_work(names, true));
    }
    std::vector<std::string> outside;
    for (const auto& l : q.layers())
        if (!in_blocks.count(l->name())) outside.push_back(l->name());
    plan.parts.push_back(part_work(outside, false));
    return plan;
}

}  // namespace ql
