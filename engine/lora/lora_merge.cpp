// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/lora_merge.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <map>
#include <set>

#include "engine/core/errors.h"

namespace ql {
namespace {

// The bytes that say which grid point each element took: element codes, or for the GGUF formats
// the block bytes (codes and scales together).
std::vector<uint8_t> merge_code_bytes(const LayerQuantizer& q) {
    EncodedTensor e = q.encode_weight();
    return e.codes.bytes.empty() ? std::move(e.gguf_blocks) : std::move(e.codes.bytes);
}

double merge_fraction_differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    if (a.empty() || a.size() != b.size()) return a == b ? 0.0 : 1.0;
    int64_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
    return static_cast<double>(n) / static_cast<double>(a.size());
}

}  // namespace

at::Tensor base_forward_weight(const QuantizedModel& base, const LinearLayer& layer) {
    c10::NoGradGuard no_grad;
    LayerQuantizer* q = base.find(layer.name);
    at::Tensor w = (q && q->weight_enabled() ? q->quantized_weight() : layer.weight).detach().to(at::kFloat);
    if (q && q->pre_quant_scale().defined()) w = w * q->pre_quant_scale();
    return w;
}

std::vector<MergedLayer> merge_adapters(QuantizedModel& base, LoraAdapters& adapters) {
    c10::NoGradGuard no_grad;
    std::vector<MergedLayer> rows;
    for (const LoraLayer& l : adapters.layers())
        if (l.layer->input_rotation)
            throw UserError("merge: " + l.module + " rotates its input online (Hadamard); merging into a rotated base is not "
                            "supported (export the adapter instead)");
    for (LoraLayer& l : adapters.layers()) {
        LayerQuantizer* q = base.find(l.module);
        const bool quantized = q && q->weight_enabled();
        MergedLayer row;
        row.module = l.module;
        row.format = quantized ? q->weight_spec().info->name : "fp32";
        row.elements = l.layer->weight.numel();
        const at::Tensor w_eff = base_forward_weight(base, *l.layer);
        const at::Tensor d = adapters.delta(l);
        const std::vector<uint8_t> before = quantized ? merge_code_bytes(*q) : std::vector<uint8_t>{};
        at::Tensor w_new = (quantized ? q->quantized_weight().to(at::kFloat) : l.layer->weight.detach().to(at::kFloat)) +
                           (q && q->pre_quant_scale().defined() ? d / q->pre_quant_scale() : d);
        l.layer->weight.copy_(w_new);
        row.update_norm = d.norm().item<double>() / std::max(w_eff.norm().item<double>(), 1e-30);
        if (quantized) {
            row.codes_changed = merge_fraction_differing(before, merge_code_bytes(*q));
            const at::Tensor merged = base_forward_weight(base, *l.layer);
            row.requant_error = (merged - (w_eff + d)).norm().item<double>() / std::max(d.norm().item<double>(), 1e-30);
        }
        rows.push_back(row);
    }
    adapters.set_enabled(false);
    return rows;
}

void dequantize_unmerged(QuantizedModel& base, const LoraAdapters& adapters) {
    c10::NoGradGuard no_grad;
    for (const auto& q : base.layers()) {
        if (!q->weight_enabled() || adapters.find(q->name())) continue;
        const at::Tensor w = q->quantized_weight().clone();
        q->layer().weight.copy_(w);
    }
    base.set_enabled(false);
}

std::vector<std::pair<std::string, at::Tensor>> full_precision_state(const QuantizedModel& base) {
    c10::NoGradGuard no_grad;
    std::map<std::string, at::Tensor> folded;
    for (const auto& q : base.layers()) {
        if (!q->pre_quant_scale().defined()) continue;
        const auto* linear = dynamic_cast<const LinearLayer*>(&q->layer());
        if (!linear) throw UserError("merge: " + q->name() + " (not a Linear layer) has a pre_quant_scale");
        const at::Tensor w = q->layer().weight.detach().to(at::kFloat) * q->pre_quant_scale();
        folded[q->name() + ".weight"] = (linear->file_layout_in_out ? w.t() : w).contiguous();
    }
    std::set<std::string> skip;
    for (const auto& [name, t] : folded) skip.insert(name);
    std::vector<std::pair<std::string, at::Tensor>> state = base.model().file_state(skip);
    for (auto& [name, t] : folded) state.emplace_back(name, t);
    for (auto& [name, t] : state) t = t.detach().to(at::kFloat).contiguous();
    return state;
}

}  // namespace ql
