// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_export.h"

#include <ATen/Functions.h>

#include <chrono>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/loading/model_source.h"
#include "engine/export/gguf_model_metadata.h"
#include "engine/export/gguf_names.h"
#include "engine/export/gguf_tensor_writer.h"
#include "engine/export/gguf_tokenizer_metadata.h"
#include "engine/formats/format_codec.h"
#include "engine/quant/plain_weights.h"
#include "engine/quant/quantized_model.h"

namespace ql {

std::vector<std::string> gguf_export_types() { return {"f32", "f16", "q8_0", "q4_0", "q4_1", "q5_0", "mxfp4"}; }

namespace {

GgmlType parse_type(const std::string& type) {
    for (const auto& t : gguf_export_types())
        if (t == type) return *ggml_type_from_name(type);
    std::string list;
    for (const auto& t : gguf_export_types()) list += (list.empty() ? "" : ", ") + t;
    throw UserError("GGUF export: unknown type '" + type + "' (expected one of " + list + ")");
}

// The GGUF format name a recipe format matches exactly (gguf_q4_0 -> Q4_0), if any.
std::optional<GgmlType> recipe_gguf_type(const QuantSpec& spec) {
    if (!spec.info) return std::nullopt;
    const std::string& n = spec.info->name;
    if (n.rfind("gguf_", 0) != 0) return std::nullopt;
    return ggml_type_from_name(n.substr(5));
}

std::string model_display_name(const OpenedModel& m) {
    if (!m.model->config().name.empty()) return m.model->config().name;
    return std::filesystem::path(m.path).filename().string();
}

}  // namespace

GgufExportResult export_gguf(const std::string& model_arg, const std::string& out_file, const GgufExportOptions& options,
                             JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    const GgmlType type = parse_type(options.type);
    const bool quantized_type = ggml_block_size(type) > 1;
    // Refuse an existing file before the (slow) model load.
    if (std::error_code ec; std::filesystem::exists(out_file, ec) && !options.force)
        throw UserError(out_file + ": already exists (use --force to overwrite it)");

    sink.progress(0, 0, "load");
    OpenedModel opened = open_model(model_arg);
    const ModelConfig& config = opened.model->config();
    GgufExportResult result;
    result.architecture = gguf_architecture(config);
    result.type = options.type;
    result.path = out_file;
    result.from_checkpoint = opened.quantization != nullptr;

    GgufModelMetadata model_md = gguf_model_metadata(config, model_display_name(opened), type);
    GgufTokenizerMetadata tok_md = gguf_tokenizer_metadata(opened.path, config.vocab_size);
    result.tokenizer_source = tok_md.source;
    result.warnings = model_md.warnings;
    result.warnings.insert(result.warnings.end(), tok_md.warnings.begin(), tok_md.warnings.end());
    GgufMetadata metadata = model_md.metadata;
    metadata.insert(metadata.end(), tok_md.metadata.begin(), tok_md.metadata.end());

    QuantizedModel* quantization = opened.quantization.get();
    if (quantization) {
        if (const std::string why = plain_weights_refusal(*quantization); !why.empty())
            throw UserError("GGUF export: " + why + "; export --as fakequant (the rotations folded into the weights)");
        for (const auto& kv : quantization->kv_caches())
            if (kv->configured() && kv->enabled()) {
                result.warnings.push_back("the KV-cache quantization (" + kv->settings().describe() +
                                          ") is not written: llama.cpp chooses its cache type at run time (--cache-type-k/v)");
                break;
            }
    }
    bool warned_requantize = false, warned_inputs = false;
    std::vector<GgufTensorPlan> plans;

    // The quantizer of `layer` with a configured weight quantizer, or null.
    auto quantized_layer = [&](const std::string& layer) -> LayerQuantizer* {
        if (!quantization) return nullptr;
        LayerQuantizer* lq = quantization->find(layer);
        if (!lq || !lq->weight_configured()) {
            if (lq && lq->input_configured() && !warned_inputs) {
                warned_inputs = true;
                result.warnings.push_back("activation quantizers are not written: llama.cpp quantizes activations itself");
            }
            return nullptr;
        }
        if (lq->pre_quant_scale().defined())
            throw UserError("GGUF export: layer '" + layer + "' has a pre_quant_scale (AWQ / SmoothQuant smoothing not folded "
                            "into the weights): GGUF has no per-input-channel scale, the file could not reproduce the model");
        if (lq->input_configured() && !warned_inputs) {
            warned_inputs = true;
            result.warnings.push_back("activation quantizers are not written: llama.cpp quantizes activations itself");
        }
        const auto exact = recipe_gguf_type(lq->weight_spec());
        if (quantized_type && (!exact || *exact != type) && !warned_requantize) {
            warned_requantize = true;
            result.warnings.push_back("recipe format '" + (lq->weight_spec().info ? lq->weight_spec().info->name : std::string("?")) +
                                      "' is re-quantized to " + ggml_type_name(type) + " (a second rounding)");
        }
        return lq;
    };

    auto add_plan = [&](const std::string& gguf_name, const std::string& source, std::vector<int64_t> ne, bool is_matrix,
                        bool from_quantized, std::function<at::Tensor()> values) {
        GgmlType t = GgmlType::F32;
        if (is_matrix) {
            t = type;
            if (result.from_checkpoint && !from_quantized && quantized_type) t = GgmlType::F32;
            if (ne[0] % ggml_block_size(t) != 0) {
                const GgmlType fallback = type == GgmlType::F32 ? GgmlType::F32 : GgmlType::F16;
                result.warnings.push_back(gguf_name + ": row length " + std::to_string(ne[0]) + " is not a multiple of 32; written as " +
                                          ggml_type_name(fallback));
                t = fallback;
            }
        }
        result.tensors.push_back({gguf_name, source, ggml_type_name(t), ne, from_quantized});
        plans.push_back({gguf_name, std::move(ne), t, std::move(values)});
    };

    for (const auto& [hf_name, tensor] : opened.model->named_parameters()) {
        const auto mapped = gguf_tensor_name(config, hf_name);
        if (!mapped) {
            result.warnings.push_back("parameter '" + hf_name + "' has no llama.cpp tensor and is not written");
            continue;
        }
        std::vector<int64_t> ne(tensor.sizes().rbegin(), tensor.sizes().rend());
        const bool is_weight = hf_name.size() > 7 && hf_name.compare(hf_name.size() - 7, 7, ".weight") == 0;
        const std::string layer = is_weight ? hf_name.substr(0, hf_name.size() - 7) : "";
        LayerQuantizer* lq = is_weight && tensor.dim() == 2 ? quantized_layer(layer) : nullptr;
        const int64_t heads = mapped->permutation == GgufRowPermutation::Query ? config.num_heads
                              : mapped->permutation == GgufRowPermutation::Key ? config.num_kv_heads
                                                                                : 0;
        at::Tensor param = tensor;
        add_plan(mapped->name, hf_name, ne, tensor.dim() >= 2, lq != nullptr, [param, lq, heads]() {
            at::Tensor w = lq ? lq->quantized_weight() : param;
            w = w.detach().to(at::kFloat);
            return heads ? gguf_permute_rows(w, heads) : w.contiguous();
        });
    }
    // A tied lm_head that a checkpoint quantized differs from token_embd: write it as output.
    if (config.tie_embeddings && quantization) {
        if (LayerQuantizer* lq = quantized_layer("lm_head")) {
            const at::Tensor w = lq->layer().weight;
            std::vector<int64_t> ne(w.sizes().rbegin(), w.sizes().rend());
            add_plan("output.weight", "lm_head", ne, true, true, [lq]() { return lq->quantized_weight().detach().to(at::kFloat).contiguous(); });
        }
    }
    if (config.rope_scaling.type == "llama3") {
        const std::vector<float> f = gguf_llama3_rope_factors(config);
        add_plan("rope_freqs.weight", "rope_scaling (llama3)", {static_cast<int64_t>(f.size())}, false, false,
                 [f]() { return at::tensor(at::ArrayRef<float>(f)); });
    }

    for (const auto& w : result.warnings) sink.log(LogLevel::Warning, "GGUF export: " + w);
    result.bytes = write_gguf_tensors(out_file, metadata, plans, options.force, sink, cancel, "export");
    sink.artifact("gguf", out_file);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace ql
