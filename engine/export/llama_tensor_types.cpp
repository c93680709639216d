// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/llama_tensor_types.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/export/gguf_names.h"
#include "engine/export/gguf_type_mix.h"

namespace ql {
namespace {

std::string lower_type_name(GgmlType t) {
    std::string s = ggml_type_name(t);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The GGML type the plan gives layer `l`'s weight: the gguf_* formats' own types, f32 / f16 /
// bf16 for the passthrough formats, f16 for a layer kept in high precision.
GgmlType layer_type(const LayerQuantizer& l) {
    if (!l.weight_enabled()) return GgmlType::F16;
    const QuantSpec& spec = l.plan().weight_spec;
    const std::string format = spec.info ? spec.info->name : std::string("(none)");
    if (const auto t = gguf_type_of_format(format)) return *t;
    if (format == "fp32") return GgmlType::F32;
    if (format == "fp16") return GgmlType::F16;
    if (format == "bf16") return GgmlType::BF16;
    throw UserError("llama tensor types: layer " + l.name() + " is planned in " + format +
                    ", which has no GGML type (llama-quantize takes the gguf_* formats, e.g. gguf_q4_k, gguf_q8_0, "
                    "gguf_mxfp4, and f32 / f16 / bf16); export this plan as modelopt or compressed-tensors instead");
}

}  // namespace

std::string llama_tensor_type_pattern(const std::string& gguf_name) {
    std::string p = "^";
    for (const char c : gguf_name) {
        if (std::strchr(".^$|()[]{}*+?\\", c)) p += '\\';
        p += c;
    }
    return p + "$";
}

LlamaTensorTypePlan llama_tensor_type_plan(const QuantizedModel& q) {
    const Recipe& r = q.recipe();
    if (r.kv_cache.enabled)
        throw UserError("llama tensor types: the recipe's kv_cache section has no llama-quantize form (llama.cpp's KV cache "
                        "type is a runtime option: llama-cli -ctk / -ctv)");
    if (!r.rotation.method.empty())
        throw UserError("llama tensor types: the recipe's rotation section (" + r.rotation.method + ") has no llama-quantize form");
    const ModelConfig& config = q.model().config();
    gguf_architecture(config);  // UserError naming the architecture when llama.cpp has none for it
    LlamaTensorTypePlan plan;
    for (const auto& lp : q.layers()) {
        const LayerQuantizer& l = *lp;
        if (l.input_enabled())
            throw UserError("llama tensor types: layer " + l.name() + " quantizes its input, which llama.cpp does not (it "
                            "quantizes weights only); export this plan as modelopt or compressed-tensors instead");
        // A tied lm_head the plan leaves alone is not written (llama.cpp reuses token_embd).
        if (config.tie_embeddings && l.name() == "lm_head" && !l.weight_enabled()) continue;
        const auto name = gguf_tensor_name(config, l.name() + ".weight");
        if (!name) throw UserError("llama tensor types: layer " + l.name() + " has no llama.cpp tensor");
        const GgmlType t = layer_type(l);
        if (l.weight_enabled() && t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16) ++plan.quantized_layers;
        else ++plan.high_precision_layers;
        if (name->name == "output.weight") plan.output_type = t;
        else plan.tensors.emplace_back(name->name, t);
    }
    if (plan.quantized_layers == 0) throw UserError("llama tensor types: the plan quantizes no layer of the model");
    for (const auto& [tensor, type] : plan.tensors)
        plan.text += "--tensor-type " + llama_tensor_type_pattern(tensor) + "=" + lower_type_name(type) + "\n";
    if (plan.output_type) plan.text += "--output-tensor-type " + lower_type_name(*plan.output_type) + "\n";
    if (plan.token_embedding_type) plan.text += "--token-embedding-type " + lower_type_name(*plan.token_embedding_type) + "\n";
    return plan;
}

}  // namespace ql
