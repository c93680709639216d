// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/model_api.h"

#include <ATen/ops/tensor.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/ScalarType.h>

#include <cctype>
#include <cstring>
#include <map>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/export/gguf_type_mix.h"
#include "engine/io/gguf_kernel_types.h"
#include "engine/loading/gguf_conversion.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace {

std::string dtype_text(const at::Tensor& t) {
    switch (t.scalar_type()) {
        case at::kFloat: return "float32";
        case at::kHalf: return "float16";
        case at::kBFloat16: return "bfloat16";
        case at::kDouble: return "float64";
        default: return c10::toString(t.scalar_type());
    }
}

LayerSummary layer_summary(const QuantizableLayer& l) {
    LayerSummary ls;
    ls.name = l.name;
    ls.kind = layer_kind_name(l.kind());
    ls.weight_shape.assign(l.weight.sizes().begin(), l.weight.sizes().end());
    ls.has_bias = l.bias.defined();
    ls.parameters = l.weight.numel() + (l.bias.defined() ? l.bias.numel() : 0);
    return ls;
}

void describe_quantizers(LayerSummary& ls, const LayerQuantPlan& p) {
    const QuantizerSettings& weight = p.weight;
    const QuantizerSettings& input = p.input;
    const QuantSpec& weight_spec = p.weight_spec;
    const std::vector<int64_t> matrix_shape = weight_matrix_shape(*p.layer);
    ls.weight_quantizer = describe(weight, false);
    ls.weight_fallback = p.weight_fallback;
    ls.input_quantizer = describe(input, true);
    if (weight.enabled && weight_spec.info) {
        ls.weight_format = weight.options.format;
        int64_t numel = 1;
        for (int64_t d : matrix_shape) numel *= d;
        ls.weight_bits = numel > 0 ? weight_storage_bits(weight_spec, matrix_shape) / static_cast<double>(numel) : 16;
    }
}

double bits_of(const GgufTensorInfo& t) {
    const int64_t n = t.numel();
    return n > 0 ? 8.0 * static_cast<double>(t.size) / static_cast<double>(n) : 0;
}

void describe_gguf(ModelSummary& s, const GgufSource& g) {
    s.is_gguf = true;
    const GgufFile& f = *g.file;
    s.gguf.version = f.version();
    s.gguf.alignment = f.alignment();
    s.gguf.metadata_count = static_cast<int64_t>(f.metadata().size());
    if (const GgufValue* v = f.find("general.file_type"); v && v->type != GgufValueType::STRING && v->type != GgufValueType::ARRAY)
        try {
            const GgufFileType* t = find_gguf_file_type(static_cast<uint32_t>(v->as_uint("general.file_type")));
            s.gguf.file_type = t ? t->llama_name : "type " + std::to_string(v->as_uint("general.file_type"));
        } catch (const UserError&) {
        }
    s.gguf.tokenizer = g.vocabulary.model + (g.vocabulary.pre.empty() ? "" : " / " + g.vocabulary.pre);
    s.gguf.warnings = g.warnings;
    std::map<const GgufTensorInfo*, std::string> parameter_of;
    for (const GgufParameterSource& p : g.parameters) parameter_of[p.tensor] = p.parameter;
    for (const GgufTensorInfo& t : f.tensors()) {
        GgufTensorSummary ts;
        ts.name = t.name;
        ts.type = ggml_type_name(t.type);
        ts.ne = t.ne;
        ts.bytes = t.size;
        ts.bits_per_weight = bits_of(t);
        const auto it = parameter_of.find(&t);
        if (it != parameter_of.end()) ts.parameter = it->second;
        s.gguf.tensors.push_back(std::move(ts));
    }
    for (LayerSummary& l : s.layers) {
        const GgufParameterSource* p = g.weight_of(l.name);
        if (!p) continue;
        l.weight_format = gguf_format_name(p->tensor->type);
        l.weight_bits = bits_of(*p->tensor);
        l.weight_quantizer = std::string(ggml_type_name(p->tensor->type)) + " (from file)";
    }
}

}  // namespace

std::vector<float> layer_weight_row(const std::string& model, const std::string& layer, int64_t row) {
    OpenedModel m = open_model(model);
    for (const QuantizableLayer* l : m.model->quantizable_layers()) {
        if (l->name != layer) continue;
        const std::vector<int64_t> shape = weight_matrix_shape(*l);
        if (row < 0 || row >= shape[0])
            throw UserError("layer " + layer + " has " + std::to_string(shape[0]) + " output channels; channel " +
                            std::to_string(row) + " does not exist");
        const at::Tensor w = l->weight.detach().reshape({shape[0], shape[1]})[row].to(at::kFloat).contiguous();
        return std::vector<float>(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
    }
    throw UserError("model " + m.path + " has no quantizable layer named '" + layer + "'");
}

namespace {

// The recipe planned against the model's layers; UserError when it does not fit.
std::vector<LayerQuantPlan> checked_plan(const Recipe& recipe, Model& model) {
    {
        // The KV cache and the rotation's block sizes are checked against the model too (a KV
        // cache on an encoder, an exclude glob matching no attention, an rht block that does not
        // divide a layer); nothing is changed.
        const QuantizedModel check(model, recipe);
        online_rotations(check);
    }
    return plan_recipe(recipe, model);
}

}  // namespace

std::vector<LayerSummary> plan_layer_formats(const std::string& model, const std::string& recipe_json,
                                             const std::string& source) {
    OpenedModel m = open_model(model);
    const Recipe recipe = parse_recipe(recipe_json, source);
    std::vector<LayerSummary> out;
    for (const LayerQuantPlan& p : checked_plan(recipe, *m.model)) {
        LayerSummary ls = layer_summary(*p.layer);
        describe_quantizers(ls, p);
        out.push_back(std::move(ls));
    }
    return out;
}

std::vector<std::string> recipe_misfits(const std::string& model, const std::vector<RecipeToCheck>& recipes) {
    OpenedModel m = open_model(model);
    std::vector<std::string> out;
    for (const RecipeToCheck& r : recipes) {
        try {
            checked_plan(r.json.empty() ? load_recipe(r.name) : parse_recipe(r.json, r.name), *m.model);
            out.emplace_back();
        } catch (const UserError& e) {
            out.emplace_back(e.what());
        }
    }
    return out;
}

ModelSummary inspect_model(const std::string& model) {
    OpenedModel m = open_model(model);
    ModelSummary s;
    s.path = m.path;
    s.is_demo = m.is_demo;
    s.config = m.model->config();
    s.parameter_count = m.model->parameter_count();
    s.generates_text = m.model->generates_text() && m.text.has_text();
    s.has_chat_template = m.text.chat_template.has_value();
    s.chat_template_origin = m.text.chat_template_origin;
    for (const auto& [name, t] : m.model->named_parameters()) {
        ParameterSummary p;
        p.name = name;
        p.shape.assign(t.sizes().begin(), t.sizes().end());
        p.dtype = dtype_text(t);
        p.numel = t.numel();
        s.parameter_bytes += t.numel() * static_cast<int64_t>(t.element_size());
        s.parameters.push_back(std::move(p));
    }
    std::vector<LayerSummary> planned;
    if (m.quantization) {
        for (const LayerQuantPlan& p : plan_recipe(m.quantization->recipe(), *m.model)) {
            LayerSummary ls = layer_summary(*p.layer);
            describe_quantizers(ls, p);
            planned.push_back(std::move(ls));
        }
    }
    for (const QuantizableLayer* l : m.model->quantizable_layers()) {
        LayerSummary ls = layer_summary(*l);
        for (const LayerSummary& p : planned)
            if (p.name == ls.name) ls = p;
        s.layers.push_back(std::move(ls));
    }
    if (m.gguf) describe_gguf(s, *m.gguf);
    return s;
}

std::vector<std::string> available_compute_devices() {
    std::vector<std::string> devices = {"cpu"};
    const CudaAvailability cuda = cuda_availability();
    if (cuda.torch_has_cuda && cuda.quantlab_has_cuda)
        for (int i = 0; i < cuda.gpus; ++i) devices.push_back("cuda:" + std::to_string(i));
    return devices;
}

ConvertedFolder convert_gguf_model(const std::string& gguf_path, const std::string& out, bool force) {
    const GgufConversion c = convert_gguf_to_hf(gguf_path, out, force);
    return {c.folder, c.files, c.warnings};
}

TokenizedText tokenize_text(const std::string& model, const std::string& text) {
    const OpenedModel m = open_model(model);
    if (!m.data.encode_text || !m.text.has_text())
        throw UserError(m.path + " has no tokenizer for text (tokenizer.json or tokenizer.ggml.*)");
    TokenizedText t;
    t.ids = m.data.encode_text(text, "text");
    for (int64_t id : t.ids) t.pieces.push_back(m.text.decode({id}));
    return t;
}

NdArray model_logits(const std::string& model, const NdArray& ids, const std::string& device) {
    if (ids.shape.size() != 2) throw UserError("logits: token ids must be [batch, tokens], got " + shape_string(ids.shape));
    if (ids.dtype != DType::Int64 && ids.dtype != DType::Int32) throw UserError("logits: token ids must be int64 or int32");
    OpenedModel m = open_model(model);
    move_opened_model(m, torch_device(device));
    std::vector<int64_t> values(static_cast<size_t>(ids.numel()));
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = ids.dtype == DType::Int64 ? ids.as<int64_t>()[i] : ids.as<int32_t>()[i];
    c10::InferenceMode inference;
    const at::Tensor input = on_model_device(*m.model, at::tensor(values, at::kLong).reshape({ids.shape[0], ids.shape[1]}));
    const at::Tensor logits = m.model->forward(input).to(at::kCPU, at::kFloat).contiguous();
    NdArray out = NdArray::zeros(DType::Float32, {logits.sizes().begin(), logits.sizes().end()});
    std::memcpy(out.bytes.data(), logits.data_ptr<float>(), out.bytes.size());
    return out;
}

}  // namespace ql
