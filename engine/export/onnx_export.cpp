// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/onnx_export.h"

#include <ATen/Functions.h>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/export/export_manifest.h"
#include "engine/export/onnx_graph_writer.h"
#include "engine/export/onnx_graphs.h"
#include "engine/export/onnx_linear.h"
#include "engine/models/bert_model.h"
#include "engine/models/llama_model.h"
#include "engine/quant/kv_cache_quantizer.h"
#include "engine/quant/layer_quantizer.h"

namespace ql {
namespace {

bool keep_source_file(const std::string& name) {
    return !is_hf_weights_file(name) && name != "hf_quant_config.json" && name.rfind("quantlab_", 0) != 0 &&
           name.rfind("ptq_report", 0) != 0 && name.rfind("train_report", 0) != 0 && name.rfind("training_state", 0) != 0;
}

void check_kv_caches(const QuantizedModel& q) {
    for (const auto& kv : q.kv_caches()) {
        if (kv->rotates_qk())
            throw UserError("KV cache of " + kv->name() + ": the Hadamard rotation of Q and K has no ONNX form here");
        if (!kv->enabled()) continue;
        const KvCacheSettings& s = kv->settings();
        if ((s.format != "fp8_e4m3" && s.format != "fp8_e5m2" && s.format != "int8") || s.granularity != "tensor")
            throw UserError("KV cache of " + kv->name() + ": " + s.describe() +
                            " has no ONNX QDQ form here (per-tensor fp8_e4m3, fp8_e5m2 or int8 only)");
        if (kv->key_amax().size() != 1 || kv->value_amax().size() != 1)
            throw UserError("KV cache of " + kv->name() + ": the static scales are not calibrated");
    }
}

}  // namespace

OnnxValueInfo onnx_tensor_value(const std::string& name, OnnxType type, std::vector<int64_t> dims, std::vector<std::string> params) {
    OnnxValueInfo v;
    v.name = name;
    v.elem_type = static_cast<int32_t>(type);
    v.dims = std::move(dims);
    v.dim_params = std::move(params);
    return v;
}

std::string onnx_unsupported_model(const Model& m) {
    const ModelConfig& c = m.config();
    if (dynamic_cast<const BertModel*>(&m)) {
        if (c.mlm_head) return c.architecture + " with its masked-LM head (the ONNX export writes the encoder: BertModel)";
        if (c.activation != "gelu" && c.activation != "gelu_new" && c.activation != "gelu_pytorch_tanh" && c.activation != "relu")
            return "the activation " + c.activation;
        return "";
    }
    if (!dynamic_cast<const LlamaModel*>(&m))
        return c.architecture + " (the ONNX export writes Llama-family decoders -- Llama, Mistral, SmolLM, Qwen2 -- and BERT encoders)";
    if (c.qk_norm) return c.architecture + " with q_norm / k_norm (Qwen3)";
    if (c.activation != "silu") return "the MLP activation " + c.activation + " (SwiGLU with SiLU only)";
    if (c.sliding_window > 0 && c.sliding_window < c.max_positions)
        return "a sliding attention window of " + std::to_string(c.sliding_window) + " tokens (ONNX Attention's causal mask has none)";
    return "";
}

const at::Tensor& OnnxGraphContext::param(const std::string& name) const {
    const auto it = params.find(name);
    if (it == params.end()) throw UserError("ONNX export: the model has no parameter " + name);
    return it->second;
}

std::string OnnxGraphContext::float_initializer(const std::string& name) const {
    const at::Tensor w = param(name).to(at::kCPU, at::kFloat).contiguous();
    return g.initializer(name, OnnxType::Float, w.sizes().vec(), w.data_ptr<float>(), static_cast<size_t>(w.numel()) * 4);
}

void OnnxGraphContext::release(const std::vector<std::string>& modules) const {
    for (const std::string& m : modules)
        if (LayerQuantizer* l = q.find(m); l && l->weight_enabled() && !l->weight_pinned()) l->release_weight();
}

FolderExportResult export_onnx(const QuantizedModel& q, const std::string& source_folder, const std::string& out, bool force,
                               JobSink& sink, const CancellationToken& cancel, const FolderCheck& before_commit) {
    const Model& model = q.model();
    if (const std::string why = onnx_unsupported_model(model); !why.empty()) throw UserError("ONNX export: " + why + " has no ONNX form here");
    check_onnx_quantizers(q);
    check_kv_caches(q);
    for (const EmbeddingLayer* e : model.embedding_layers())
        if (LayerQuantizer* l = q.find(e->name); l && l->weight_enabled())
            throw UserError("layer " + e->name + ": a quantized embedding has no ONNX QDQ form here (Gather reads a float table)");

    ExportFolder folder(out, force);
    ExportManifest manifest;
    manifest.layout = "onnx";
    manifest.producer_version = quantlab_version();
    manifest.fused_scale_groups = q.shared_weight_groups();
    OnnxGraphWriter g(folder.file(kOnnxDataFile), kOnnxDataFile);
    OnnxGraphContext ctx{g, q, {}, manifest, sink, cancel};
    for (auto& [name, t] : model.named_parameters()) ctx.params[name] = t;
    if (model.is_encoder())
        emit_encoder_graph(ctx);
    else
        emit_decoder_graph(ctx);

    const ModelConfig& c = model.config();
    const OnnxModel onnx = g.finish(c.architecture.empty() ? "quantlab" : c.architecture, kOnnxOpset, quantlab_version());
    folder.write(kOnnxModelFile, serialize_onnx(onnx));
    folder.write(kExportManifestFile, export_manifest_json(manifest));
    folder.copy_from(source_folder, keep_source_file);
    cancel.throw_if_cancelled();
    if (before_commit) before_commit(folder.partial_path());
    folder.commit();
    return {folder.files(), folder.bytes(), {}};
}

}  // namespace ql
