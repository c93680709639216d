// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isfinite.h>

#include <cmath>
#include <cstring>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/file_bytes.h"
#include "engine/models/bert_model.h"
#include "engine/models/cnn_model.h"
#include "engine/models/gemma3_model.h"
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

std::vector<std::pair<std::string, at::Tensor>> Model::file_state_of(const std::vector<std::string>& names) const {
    const std::set<std::string> wanted(names.begin(), names.end());
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const Parameter& p : parameters_)
        if (wanted.count(p.name))
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
    for (const Parameter& p : parameters_) {
        int64_t e = 1;
        for (int64_t d : p.shape) e *= d;
        n += e;
    }
    return n;
}

int64_t Model::parameter_bytes() const {
    int64_t n = 0;
    for (const Parameter& p : parameters_) n += static_cast<int64_t>(p.tensor->nbytes());
    return n;
}

void Model::set_requires_grad(bool requires_grad) {
    if (requires_grad && !parameters_float32())
        throw std::logic_error("set_requires_grad: the model keeps weights as stored; open it with WeightStorage::Float32Copy to train");
    for (Parameter& p : parameters_) p.tensor->requires_grad_(requires_grad);
}

namespace {

// An owned float32 tensor: not a view of a file mapping, not BF16 / F16.
bool owned_float32(const at::Tensor& t) {
    return t.defined() && t.scalar_type() == at::kFloat && !mapped_bytes(t.data_ptr(), t.nbytes());
}

// The index of the first NaN / Inf element, or -1. Contiguous CPU F32 / BF16 / F16 tensors are
// scanned in place by their exponent bits (no float32 copy of a mapped BF16 checkpoint: that
// copy made opening a 1B model cost 5 GB); anything else through at::isfinite.
template <class Bits>
int64_t first_all_ones_exponent(const uint8_t* data, int64_t n, Bits exponent_mask) {
    for (int64_t i = 0; i < n; ++i) {
        Bits v;
        std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
        if ((v & exponent_mask) == exponent_mask) return i;
    }
    return -1;
}

int64_t first_non_finite(const at::Tensor& t) {
    if (t.device().is_cpu() && t.is_contiguous()) {
        const auto* data = static_cast<const uint8_t*>(t.data_ptr());
        switch (t.scalar_type()) {
            case at::kFloat: return first_all_ones_exponent<uint32_t>(data, t.numel(), 0x7f800000u);
            case at::kBFloat16: return first_all_ones_exponent<uint16_t>(data, t.numel(), 0x7f80u);
            case at::kHalf: return first_all_ones_exponent<uint16_t>(data, t.numel(), 0x7c00u);
            default: break;
        }
    }
    const at::Tensor bad = at::isfinite(t).logical_not().reshape({-1}).nonzero();
    return bad.numel() ? bad[0].item<int64_t>() : -1;
}

}  // namespace

void Model::make_weight_float32(QuantizableLayer& layer) {
    if (owned_float32(layer.weight)) return;
    at::NoGradGuard no_grad;
    const at::Tensor old = layer.weight;
    at::Tensor fresh = old.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous();
    for (Parameter& p : parameters_)
        if (p.tensor->defined() && p.tensor->is_same(old)) *p.tensor = fresh;
    layer.weight = fresh;
    for (QuantizableLayer* l : layers_)
        if (l->weight.is_same(old)) l->weight = fresh;
}

void Model::make_parameters_float32() {
    at::NoGradGuard no_grad;
    for (Parameter& p : parameters_)
        if (!owned_float32(*p.tensor)) *p.tensor = p.tensor->to(at::kFloat, false, /*copy=*/true).contiguous();
    retie();
}

bool Model::parameters_float32() const {
    for (const Parameter& p : parameters_)
        if (!owned_float32(*p.tensor)) return false;
    return true;
}

uint64_t Model::release_parameter_pages(const std::vector<std::string>& names) const {
    const std::set<std::string> wanted(names.begin(), names.end());
    uint64_t released = 0;
    for (const Parameter& p : parameters_)
        if (wanted.count(p.name) && p.tensor->defined() && p.tensor->device().is_cpu())
            released += release_mapped_pages(p.tensor->data_ptr(), p.tensor->nbytes());
    return released;
}

void Model::retie() {
    for (auto& [layer, embedding] : ties_) layer->weight = embedding->weight;
}

at::Tensor Model::forward_cached(const at::Tensor&, KvCache&, bool) {
    throw UserError((config_.name.empty() ? config_.model_type : config_.name) +
                    " is not a decoder: it does not generate text (GPT-2, Llama, Mistral, Qwen2 and the demo do)");
}

namespace {

[[noreturn]] void model_not_split(const ModelConfig& c, const char* what) {
    throw std::logic_error(std::string(what) + ": " + (c.name.empty() ? c.model_type : c.name) +
                           " does not run block by block (block_count() is 0)");
}

// "model.layers.3." of block 3 (the residual stream's block name and a dot).
std::string block_prefix(const ResidualStream& r, int64_t block) {
    return r.stages().at(static_cast<size_t>(2 * block + 1)).block_name + ".";
}

bool has_prefix(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

at::Tensor Model::embed(const at::Tensor&) { model_not_split(config_, "embed"); }
at::Tensor Model::run_block(int64_t, const at::Tensor&) { model_not_split(config_, "run_block"); }
at::Tensor Model::head(const at::Tensor&) { model_not_split(config_, "head"); }

void Model::check_block_index(int64_t block) const {
    if (block < 0 || block >= block_count())
        throw std::logic_error("block " + std::to_string(block) + " of a model with " + std::to_string(block_count()) + " blocks");
}

std::vector<std::string> Model::block_parameter_names(int64_t block) const {
    check_block_index(block);
    const std::string prefix = block_prefix(residual_, block);
    std::vector<std::string> out;
    for (const Parameter& p : parameters_)
        if (has_prefix(p.name, prefix)) out.push_back(p.name);
    return out;
}

std::vector<std::string> Model::block_layer_names(int64_t block) const {
    check_block_index(block);
    const std::string prefix = block_prefix(residual_, block);
    std::vector<std::string> out;
    for (const QuantizableLayer* l : layers_)
        if (has_prefix(l->name, prefix)) out.push_back(l->name);
    return out;
}

std::vector<std::string> Model::unblocked_parameter_names() const {
    std::vector<std::string> prefixes;
    for (int64_t b = 0; b < block_count(); ++b) prefixes.push_back(block_prefix(residual_, b));
    std::vector<std::string> out;
    for (const Parameter& p : parameters_) {
        bool inside = false;
        for (const std::string& prefix : prefixes) inside = inside || has_prefix(p.name, prefix);
        if (!inside) out.push_back(p.name);
    }
    return out;
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

void Model::add_parameter(at::Tensor& slot, const std::string& name, std::vector<int64_t> shape, Init init,
                          int64_t fan_in, bool transposed_in_file) {
    parameters_.push_back({name, &slot, init, fan_in, transposed_in_file, std::move(shape)});
}

void Model::allocate_parameters() {
    for (Parameter& p : parameters_) *p.tensor = at::empty(p.shape, at::kFloat);
    retie();
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
    ties_.emplace_back(&layer, &embedding);  // the same tensor: one parameter, two uses (retie)
    if (!bias_name.empty()) {
        int64_t count = 0;
        for (const Parameter& p : parameters_)
            if (p.tensor == &embedding.weight) count = p.shape[0];
        add_parameter(layer.bias, bias_name, {count}, Init::Zeros, 1);
    }
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

void Model::add_norm(NormParams& norm, const std::string& name, int64_t dim, bool bias, Init weight_init) {
    add_parameter(norm.weight, name + ".weight", {dim}, weight_init, dim);
    if (bias) add_parameter(norm.bias, name + ".bias", {dim}, Init::Zeros, dim);
}

std::unique_ptr<Model> create_model_uninitialised(const ModelConfig& config) {
    validate_model_config(config, config.name.empty() ? "model config" : config.name);
    require_model_fits_memory(config, config.name.empty() ? "model config" : config.name);
    std::unique_ptr<Model> model = create_model_unallocated(config);
    model->allocate_parameters();
    return model;
}

std::unique_ptr<Model> create_model_unallocated(const ModelConfig& config) {
    validate_model_config(config, config.name.empty() ? "model config" : config.name);
    const std::string& a = config.architecture;
    if (a == "gpt2") return std::make_unique<Gpt2Model>(config);
    if (a == "llama" || a == "qwen2") return std::make_unique<LlamaModel>(config);
    if (a == "gemma3") return std::make_unique<Gemma3Model>(config);
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
    static LoadReport load(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source,
                           WeightStorage storage) {
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
            std::vector<int64_t> expected = p->shape;
            if (p->transposed_in_file) std::swap(expected[0], expected[1]);
            if (tensor.sizes().vec() != expected)
                throw UserError(source + ": tensor '" + file_name + "' has shape " + shape_str(tensor.sizes()) +
                                ", expected " + shape_str(expected));
            if (!tensor.is_floating_point())
                throw UserError(source + ": tensor '" + file_name + "' has dtype " +
                                std::string(tensor.dtype().name()) + ", expected a floating-point type");
            const bool keep = storage == WeightStorage::AsStored && tensor.dim() >= 2 &&
                              (tensor.scalar_type() == at::kFloat || tensor.scalar_type() == at::kBFloat16 ||
                               tensor.scalar_type() == at::kHalf);
            at::Tensor value = keep ? tensor : tensor.to(at::kFloat);
            if (const int64_t bad = first_non_finite(value); bad >= 0)
                throw UserError(source + ": tensor '" + file_name + "' holds NaN or infinite values (element " +
                                std::to_string(bad) + ")");
            // Checked once: a mapped tensor's pages need not stay resident until it is used.
            if (keep && value.device().is_cpu()) release_mapped_pages(value.data_ptr(), value.nbytes());
            found[p] = {file_name, std::move(value)};
        }
        for (const Model::Parameter& p : model.parameters_)
            if (!found.count(&p)) throw UserError(source + ": tensor '" + p.name + "' is missing");

        at::NoGradGuard no_grad;
        for (auto& [p, entry] : found) {
            const at::Tensor value = p->transposed_in_file ? entry.second.t() : entry.second;
            at::Tensor& slot = *p->tensor;
            if (storage == WeightStorage::AsStored)
                slot = p->transposed_in_file ? value.contiguous() : value;  // GPT-2 Conv1D: a copy in its dtype
            else if (slot.defined() && slot.sizes() == value.sizes() && owned_float32(slot))
                slot.copy_(value);  // keeps the parameter's identity
            else
                slot = value.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous();
        }
        model.retie();
        return report;
    }
};

LoadReport load_state(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source_name,
                      WeightStorage storage) {
    return ModelStateLoader::load(model, state, source_name, storage);
}

std::unique_ptr<Model> create_model(const ModelConfig& config, uint64_t seed) {
    std::unique_ptr<Model> model = create_model_uninitialised(config);
    model->initialise(seed);
    return model;
}

}  // namespace ql
