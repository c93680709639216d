// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/weight_memory.h"

#include <map>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/export/compressed_tensors_layout.h"
#include "engine/export/hf_modelopt_layout.h"
#include "engine/io/gguf_kernel_types.h"
#include "engine/quant/quant_plan.h"

namespace ql::evaluation {
namespace {

bool memory_is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

// Which part of a layer's export a tensor is: its codes, its block / group / channel scales, or
// a per-tensor scalar (global scales, input scales, AWQ's pre_quant_scale, compressed-tensors'
// weight_shape).
void memory_add_tensor(WeightMemory& w, const std::string& layer, const ExpectedTensor& t) {
    const std::optional<uint64_t> bytes = safetensors_byte_size(t.dtype, t.shape);
    if (!bytes) throw UserError(layer + ": tensor " + t.name + " has no whole byte size");
    const std::string suffix = t.name.substr(t.name.rfind('.') + 1);
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const auto b = static_cast<int64_t>(*bytes);
    if (suffix == "weight" || suffix == "weight_packed") w.code_bytes += b;
    else if ((suffix == "weight_scale" || suffix == "weight_zero_point") && numel > 1) w.scale_bytes += b;
    else w.global_scale_bytes += b;
}

struct LayoutCount {
    int64_t modelopt = 0, compressed_tensors = 0, estimate = 0;
};

std::string memory_layout_text(const LayoutCount& n) {
    std::string out;
    auto add = [&](int64_t count, const char* what) {
        if (count) out += (out.empty() ? "" : ", ") + std::string(what) + " (" + std::to_string(count) + " layers)";
    };
    add(n.modelopt, "Model Optimizer HF checkpoint");
    add(n.compressed_tensors, "compressed-tensors");
    add(n.estimate, "format estimate");
    return out + (out.empty() ? "" : "; ") + "other parameters BF16";
}

// The base's weights (for a LoRA run, without its adapters).
WeightMemory measure_base_weight_memory(const OpenedModel& m) {
    WeightMemory w;
    w.parameters = m.model->parameter_count();
    if (m.gguf) {
        int64_t quantized = 0;
        for (const GgufTensorInfo& t : m.gguf->file->tensors()) {
            if (memory_is_float_type(t.type)) {
                w.high_precision_bytes += static_cast<int64_t>(t.size);
            } else {
                w.code_bytes += static_cast<int64_t>(t.size);
                quantized += t.numel();
            }
        }
        w.quantized_parameters = quantized;
        w.layout = "GGUF file tensors as stored (quantized blocks: codes with their scales)";
        return w;
    }
    if (!m.quantization) {
        w.high_precision_bytes = 2 * w.parameters;
        w.layout = "every parameter BF16";
        return w;
    }
    LayoutCount n;
    for (const auto& lp : m.quantization->layers()) {
        LayerQuantizer& l = *lp;
        if (!l.weight_enabled()) continue;
        const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
        const int64_t out = shape[0], in = shape[1];
        w.quantized_parameters += out * in;
        try {
            for (const ExpectedTensor& t : hf_expected_tensors(l.name(), hf_format_of(l), out, in)) memory_add_tensor(w, l.name(), t);
            ++n.modelopt;
            continue;
        } catch (const UserError&) {
        }
        try {
            for (const ExpectedTensor& t : ct_expected_tensors(l.name(), ct_scheme_of(l), out, in)) memory_add_tensor(w, l.name(), t);
            ++n.compressed_tensors;
            continue;
        } catch (const UserError&) {
        }
        const QuantSpec spec = l.weight_spec();
        const double bits = weight_storage_bits(spec, shape);
        const double code_bits = static_cast<double>(out * in) * spec.info->element_bits;
        w.code_bytes += static_cast<int64_t>(std::ceil(code_bits / 8.0));
        w.scale_bytes += static_cast<int64_t>(std::ceil((bits - code_bits) / 8.0));
        ++n.estimate;
    }
    w.high_precision_bytes = 2 * (w.parameters - w.quantized_parameters);
    w.layout = memory_layout_text(n);
    return w;
}

}  // namespace

WeightMemory measure_weight_memory(const OpenedModel& m) {
    WeightMemory w = measure_base_weight_memory(m);
    if (m.adapter_parameters > 0) {
        // A LoRA run is served as base + adapter, unmerged (vLLM's LoRA serving, PEFT without
        // merge_and_unload): the adapters in BF16 beside the base's weights.
        w.parameters += m.adapter_parameters;
        w.high_precision_bytes += 2 * m.adapter_parameters;
        w.layout += "; LoRA adapters BF16, unmerged (" + std::to_string(m.adapter_parameters) + " parameters)";
    }
    return w;
}

KvCacheCost measure_kv_cache(const OpenedModel& m, const std::vector<int64_t>& contexts) {
    KvCacheCost kv;
    double bits = 0;
    if (m.quantization) {
        const KvCacheMemory q = m.quantization->kv_cache_memory();
        kv.layers = q.layers;
        kv.kv_heads = q.kv_heads;
        kv.head_dim = q.head_dim;
        bits = q.bits_per_token;
        kv.format = m.quantization->recipe().kv_cache.enabled ? m.quantization->recipe().kv_cache.describe() : "bf16";
    } else {
        for (const AttentionSite* site : m.model->attention_sites()) {
            bits += 2.0 * static_cast<double>(site->num_kv_heads * site->head_dim) * 16.0;
            ++kv.layers;
            kv.kv_heads = site->num_kv_heads;
            kv.head_dim = site->head_dim;
        }
        kv.format = m.gguf ? "f16 (llama.cpp's default cache)" : "bf16";
    }
    kv.bytes_per_token = bits / 8.0;
    for (int64_t c : contexts) kv.contexts.emplace_back(c, kv.bytes_per_token * static_cast<double>(c));
    return kv;
}

double weight_element_bits(const OpenedModel& m) {
    std::map<int, int64_t> elements;  // element bits -> quantized elements
    if (m.gguf) {
        for (const GgufParameterSource& p : m.gguf->parameters)
            if (!p.layer.empty() && p.tensor && !memory_is_float_type(p.tensor->type))
                elements[format_info(gguf_format_name(p.tensor->type)).element_bits] += p.tensor->numel();
    } else if (m.quantization) {
        for (const auto& l : m.quantization->layers())
            if (l->weight_enabled()) {
                const std::vector<int64_t> shape = weight_matrix_shape(l->layer());
                elements[l->weight_spec().info->element_bits] += shape[0] * shape[1];
            }
    }
    int best = 16;
    int64_t most = 0;
    for (const auto& [bits, count] : elements)
        if (count > most) best = bits, most = count;
    return best;
}

std::string describe_quant_formats(const OpenedModel& m) {
    std::map<std::string, int64_t> weights, inputs;
    if (m.gguf) {
        for (const GgufParameterSource& p : m.gguf->parameters)
            if (!p.layer.empty() && p.tensor) ++weights[gguf_format_name(p.tensor->type)];
    } else if (m.quantization) {
        for (const auto& l : m.quantization->layers()) {
            if (l->weight_enabled()) ++weights[describe(l->plan().weight, false)];
            if (l->input_enabled()) ++inputs[describe(l->plan().input, true)];
        }
    }
    auto list = [](const std::map<std::string, int64_t>& counts) {
        std::string out;
        for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " layers)";
        return out;
    };
    std::string out;
    if (!weights.empty()) out = "weights " + list(weights);
    if (!inputs.empty()) out += (out.empty() ? "" : "; ") + std::string("inputs ") + list(inputs);
    return out;
}

}  // namespace ql::evaluation
