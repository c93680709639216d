// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isfinite.h>

#include <cmath>
#include <set>

#include "engine/core/errors.h"
#include "engine/models/bert_model.h"
#include "engine/models/cnn_model.h"
#include "engine/models/gpt2_model.h"
#include "engine/models/llama_model.h"
#include "engine/models/mlp_model.h"
#include "engine/models/model_size.h"

namespace ql {

std::vector<std::pair<std::string, at::Tensor>> Model::named_parameters() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    out.reserve(parameters_.size());
    for (const Parameter& p : parameters_) out.emplace_back(p.name, *p.tensor);
    return out;
}

std::vector<std::pair<std::string, at::Tensor>> Model::file_state(const std::set<std::string>& skip) const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    out.reserve(parameters_.size());
    for (const Parameter& p : parameters_)
        if (!skip.count(p.name))
            out.emplace_back(p.name, p.transposed_in_file ? p.tensor->t().contiguous() : *p.tensor);
    return out;
}

std::vector<LinearLayer*> Model::linear_layers() const {
    std::vector<LinearLayer*> out;
    for (QuantizableLayer* l : layers_)
        if (l->kind() == LayerKind::Linear) out.push_back(static_cast<LinearLayer*>(l));
    return out;
}

std::vector<Conv2dLayer*> Model::conv_layers() const {
    std::vector<Conv2dLayer*> out;
    for (QuantizableLayer* l : layers_)
        if (l->kind() == LayerKind::Conv2d) out.push_back(static_cast<Conv2dLayer*>(l));
    return out;
}

std::vector<EmbeddingLayer*> Model::embedding_layers() const {
    std::vector<EmbeddingLayer*> out;
    for (QuantizableLayer* l : layers_)
        if (l->kind() == LayerKind::Embedding) out.push_back(static_cast<EmbeddingLayer*>(l));
    return out;
}

QuantizableLayer* Model::find_layer(const std::string& name) const {
    for (QuantizableLayer* l : layers_)
        if (l->name == name) return l;
    return nullptr;
}

int64_t Model::parameter_count() const {
    int64_t n = 0;
    for (const Parameter& p : parameters_) n += p.tensor->numel();
    return n;
}

void Model::set_requires_grad(bool requires_grad) {
    for (Parameter& p : parameters_) p.tensor->requires_grad_(requires_grad);
}

at::Tensor Model::forward_cached(const at::Tensor&, KvCache&, bool) {
    throw UserError((config_.name.empty() ? config_.model_type : config_.name) +
                    " is not a decoder: it does not generate text (GPT-2, Llama, Mistral, Qwen2 and the demo do)");
}

bool Model::ignorable(const std::string& name) const {
    return config_.tie_embeddings && name == "lm_head.weight";
}

void Model::initialise(uint64_t seed) {
    at::NoGradGuard no_grad;
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (Parameter& p : parameters_) {
        at::Tensor& t = *p.tensor;
        switch (p.init) {
            case Init::Normal002: t.normal_(0.0, 0.02, gen); break;
            case Init::Ones: t.fill_(1.0); break;
            case Init::Zeros: t.zero_(); break;
            case Init::FanInUniform: {
                const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
                t.uniform_(-bound, bound, gen);
                break;
            }
        }
    }
}

at::Tensor& Model::add_parameter(at::Tensor& slot, const std::string& name, std::vector<int64_t> shape, Init init,
                                 int64_t fan_in, bool transposed_in_file) {
    slot = at::empty(shape, at::kFloat);
    parameters_.push_back({name, &slot, init, fan_in, transposed_in_file});
    return slot;
}

void Model::add_linear(LinearLayer& layer, const std::string& name, int64_t in, int64_t out, bool bias, Init init,
                       bool file_layout_in_out) {
    layer.name = name;
    layer.file_layout_in_out = file_layout_in_out;
    add_parameter(layer.weight, name + ".weight", {out, in}, init, in, file_layout_in_out);
    if (bias) add_parameter(layer.bias, name + ".bias", {out}, init == Init::FanInUniform ? init : Init::Zeros, in);
    layers_.push_back(&layer);
}

void Model::add_tied_linear(LinearLayer& layer, const std::string& name, const EmbeddingLayer& embedding,
                            const std::string& bias_name) {
    layer.name = name;
    layer.weight = embedding.weight;  // the same tensor: one parameter, two uses
    if (!bias_name.empty()) add_parameter(layer.bias, bias_name, {embedding.weight.size(0)}, Init::Zeros, 1);
    layers_.push_back(&layer);
}

void Model::add_embedding(EmbeddingLayer& layer, const std::string& name, int64_t count, int64_t dim) {
    layer.name = name;
    add_parameter(layer.weight, name + ".weight", {count, dim}, Init::Normal002, dim);
    layers_.push_back(&layer);
}

void Model::add_conv(Conv2dLayer& layer, const std::string& name, int64_t in, int64_t out, int64_t kernel,
                     int64_t stride, int64_t padding) {
    layer.name = name;
    layer.stride = stride;
    layer.padding = padding;
    const int64_t fan_in = in * kernel * kernel;
    add_parameter(layer.weight, name + ".weight", {out, in, kernel, kernel}, Init::FanInUniform, fan_in);
    add_parameter(layer.bias, name + ".bias", {out}, Init::FanInUniform, fan_in);
    layers_.push_back(&layer);
}

void Model::add_attention_site(AttentionSite& site, const std::string& name) {
    site.name = name;
    site.num_heads = config_.num_heads;
    site.num_kv_heads = config_.num_kv_heads;
    site.head_dim = config_.head_dim;
    sites_.push_back(&site);
}

void Model::add_norm(NormParams& norm, const std::string& name, int64_t dim, bool bias) {
    add_parameter(norm.weight, name + ".weight", {dim}, Init::Ones, dim);
    if (bias) add_parameter(norm.bias, name + ".bias", {dim}, Init::Zeros, dim);
}

std::unique_ptr<Model> create_model_uninitialised(const ModelConfig& config) {
    validate_model_config(config, config.name.empty() ? "model config" : config.name);
    require_model_fits_memory(config, config.name.empty() ? "model config" : config.name);
    const std::string& a = config.architecture;
    if (a == "gpt2") return std::make_unique<Gpt2Model>(config);
    if (a == "llama" || a == "qwen2") return std::make_unique<LlamaModel>(config);
    if (a == "bert") return std::make_unique<BertModel>(config);
    if (a == "mlp") return std::make_unique<MlpModel>(config);
    if (a == "cnn") return std::make_unique<CnnModel>(config);
    throw UserError("unknown architecture '" + a + "'");
}

namespace {

std::string shape_str(at::IntArrayRef s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

// Friend of Model: sees the parameter table.
class ModelStateLoader {
public:
    static LoadReport load(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source) {
        std::map<std::string, const Model::Parameter*> by_name;
        for (const Model::Parameter& p : model.parameters_) by_name[p.name] = &p;

        LoadReport report;
        std::map<const Model::Parameter*, std::pair<std::string, at::Tensor>> found;
        for (const auto& [file_name, tensor] : state) {
            const std::string name = model.canonical_name(file_name);
            auto it = by_name.find(name);
            if (it == by_name.end()) {
                if (model.ignorable(name)) {
                    report.ignored.push_back(file_name);
                    continue;
                }
                throw UserError(source + ": tensor '" + file_name + "' is not a parameter of this " +
                                model.config().model_type + " model");
            }
            const Model::Parameter* p = it->second;
            if (found.count(p))
                throw UserError(source + ": tensors '" + found[p].first + "' and '" + file_name +
                                "' are both parameter '" + name + "'");
            std::vector<int64_t> expected = p->tensor->sizes().vec();
            if (p->transposed_in_file) std::swap(expected[0], expected[1]);
            if (tensor.sizes().vec() != expected)
                throw UserError(source + ": tensor '" + file_name + "' has shape " + shape_str(tensor.sizes()) +
                                ", expected " + shape_str(expected));
            if (!tensor.is_floating_point())
                throw UserError(source + ": tensor '" + file_name + "' has dtype " +
                                std::string(tensor.dtype().name()) + ", expected a floating-point type");
            at::Tensor value = tensor.to(at::kFloat);
            if (!at::isfinite(value).all().item<bool>())
                throw UserError(source + ": tensor '" + file_name + "' holds NaN or infinite values");
            found[p] = {file_name, std::move(value)};
        }
        for (const Model::Parameter& p : model.parameters_)
            if (!found.count(&p)) throw UserError(source + ": tensor '" + p.name + "' is missing");

        at::NoGradGuard no_grad;
        for (auto& [p, entry] : found) {
            const at::Tensor& value = entry.second;
            p->tensor->copy_(p->transposed_in_file ? value.t() : value);
        }
        return report;
    }
};

LoadReport load_state(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source_name) {
    return ModelStateLoader::load(model, state, source_name);
}

std::unique_ptr<Model> create_model(const ModelConfig& config, uint64_t seed) {
    std::unique_ptr<Model> model = create_model_uninitialised(config);
    model->initialise(seed);
    return model;
}

}  // namespace ql
