// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/rotation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <map>

#include "engine/core/errors.h"
#include "engine/quant/quant_plan.h"
#include "engine/core/string_suffix.h"
#include "kernels/hadamard.h"

namespace ql {
namespace {

// diag(s) H_blockdiag as a dense float64 matrix [n, n] would be wasteful; a rotation is applied
// blockwise instead. H_b in float64: Sylvester entries / sqrt(b), exactly orthogonal up to the
// double rounding of 1 / sqrt(b).
at::Tensor sylvester64(int64_t b) {
    at::Tensor h = at::empty({b, b}, at::kDouble);
    double* p = h.data_ptr<double>();
    const double scale = 1.0 / std::sqrt(static_cast<double>(b));
    for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < b; ++j) p[i * b + j] = (__builtin_popcountll(static_cast<unsigned long long>(i & j)) & 1) ? -scale : scale;
    return h;
}

// A fused rotation Q = diag(s) H_bd of size n: rows x -> x Q.
struct FusedRotation {
    int64_t n = 0, block = 0;
    at::Tensor signs;  // [n] float64 or undefined
    at::Tensor h;      // [block, block] float64

    FusedRotation(int64_t size, int64_t b, const at::Tensor& s) : n(size), block(b), h(sylvester64(b)) {
        if (s.defined()) signs = s.to(at::kDouble);
    }
    // rows [r, n] (double) -> rows Q, on x's device (H and s are built on the host)
    at::Tensor rows(const at::Tensor& x) const {
        at::Tensor v = signs.defined() ? x * signs.to(x.device()) : x;
        return at::matmul(v.reshape({-1, n / block, block}), h.to(x.device())).reshape(x.sizes());
    }
    // rows [r, n] (double) -> rows Q^T (= rows H diag(s))
    at::Tensor rows_transposed(const at::Tensor& x) const {
        at::Tensor v = at::matmul(x.reshape({-1, n / block, block}), h.to(x.device())).reshape(x.sizes());
        return signs.defined() ? v * signs.to(x.device()) : v;
    }
};

// In-place updates of float32 parameters (views allowed), computed in double.
void assign(at::Tensor& target, const at::Tensor& value64) { target.copy_(value64.to(target.scalar_type())); }

// W [out, n]: W <- W Q (a reader of the rotated space: its input columns rotate).
void rotate_input_columns(at::Tensor w, const FusedRotation& q) { assign(w, q.rows(w.to(at::kDouble))); }
// W [n, in]: W <- Q^T W (a writer into the rotated space: y' = y Q).
void rotate_output_rows(at::Tensor w, const FusedRotation& q) {
    assign(w, q.rows(w.to(at::kDouble).t().contiguous()).t());
}
// b [n]: b <- b Q.
void rotate_vector(at::Tensor b, const FusedRotation& q) {
    if (b.defined()) assign(b, q.rows(b.to(at::kDouble).unsqueeze(0)).squeeze(0));
}

using Params = std::map<std::string, at::Tensor>;

at::Tensor& param(Params& p, const std::string& name) {
    auto it = p.find(name);
    if (it == p.end()) throw std::logic_error("rotation: the model has no parameter '" + name + "'");
    return it->second;
}
at::Tensor optional_param(Params& p, const std::string& name) {
    auto it = p.find(name);
    return it == p.end() ? at::Tensor() : it->second;
}

bool llama_like(const ModelConfig& c) { return c.architecture == "llama" || c.architecture == "qwen2"; }

// The hidden-size rotation block: the largest power of two dividing it (block-diagonal Hadamard
// for sizes that are not powers of two).
int64_t block_for(int64_t n) { return kernels::default_hadamard_block(n); }

// R1 on a Llama-family model (RMSNorm weights folded first).
void rotate_residual(Model& model, uint64_t seed, RotationReport& report) {
    const ModelConfig& c = model.config();
    Params p;
    for (auto& [name, t] : model.named_parameters()) p[name] = t;
    const int64_t n = c.hidden_size;
    const FusedRotation q(n, block_for(n), random_signs(n, seed));
    auto fold_norm_into = [&](const std::string& norm, const std::vector<std::string>& readers) {
        at::Tensor& w = param(p, norm + ".weight");
        for (const std::string& r : readers) {
            at::Tensor& m = param(p, r + ".weight");
            assign(m, m.to(at::kDouble) * w.to(at::kDouble).unsqueeze(0));
        }
        w.fill_(1.0);
    };
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        const std::vector<std::string> attn = {b + "self_attn.q_proj", b + "self_attn.k_proj", b + "self_attn.v_proj"};
        const std::vector<std::string> mlp = {b + "mlp.gate_proj", b + "mlp.up_proj"};
        fold_norm_into(b + "input_layernorm", attn);
        fold_norm_into(b + "post_attention_layernorm", mlp);
        for (const auto& r : attn) rotate_input_columns(param(p, r + ".weight"), q);
        for (const auto& r : mlp) rotate_input_columns(param(p, r + ".weight"), q);
        for (const std::string& w : {b + "self_attn.o_proj", b + "mlp.down_proj"}) {
            rotate_output_rows(param(p, w + ".weight"), q);
            rotate_vector(optional_param(p, w + ".bias"), q);
        }
    }
    fold_norm_into("model.norm", {"lm_head"});
    rotate_input_columns(param(p, "lm_head.weight"), q);
    at::Tensor& e = param(p, "model.embed_tokens.weight");
    assign(e, q.rows(e.to(at::kDouble)));
    report.applied.push_back("R1 residual stream: randomized Hadamard of " + std::to_string(n) + " (" +
                             std::to_string(n / q.block) + " block" + (n / q.block > 1 ? "s" : "") + " of " +
                             std::to_string(q.block) + ", seed " + std::to_string(seed) +
                             "), RMSNorm weights folded into q/k/v, gate/up and lm_head");
}

// Where each architecture keeps its value and output projections.
struct HeadLayout {
    std::string value_weight, value_bias;  // parameter names (bias may not exist)
    int64_t value_row_offset = 0;          // GPT-2's c_attn: V rows start at 2 * hidden
    std::string output_weight;
};

std::vector<HeadLayout> head_layouts(const ModelConfig& c) {
    std::vector<HeadLayout> out;
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string n = std::to_string(i);
        HeadLayout h;
        if (llama_like(c)) {
            const std::string b = "model.layers." + n + ".self_attn.";
            h = {b + "v_proj.weight", b + "v_proj.bias", 0, b + "o_proj.weight"};
        } else if (c.architecture == "gpt2") {
            const std::string b = "transformer.h." + n + ".attn.";
            h = {b + "c_attn.weight", b + "c_attn.bias", 2 * c.hidden_size, b + "c_proj.weight"};
        } else if (c.architecture == "bert") {
            const std::string b = "encoder.layer." + n + ".attention.";
            h = {b + "self.value.weight", b + "self.value.bias", 0, b + "output.dense.weight"};
        } else {
            return {};
        }
        out.push_back(h);
    }
    return out;
}

// R2: per KV head, V rows <- Q2^T V rows (v_h Q2) and the output projection's columns of every
// query head reading it <- columns Q2.
void rotate_heads(Model& model, uint64_t seed, RotationReport& report) {
    const ModelConfig& c = model.config();
    Params p;
    for (auto& [name, t] : model.named_parameters()) p[name] = t;
    const int64_t d = c.head_dim, group = c.num_heads / c.num_kv_heads;
    const FusedRotation q(d, block_for(d), random_signs(d, seed ^ 0x9E3779B97F4A7C15ull));
    for (const HeadLayout& h : head_layouts(c)) {
        at::Tensor& v = param(p, h.value_weight);
        at::Tensor vb = optional_param(p, h.value_bias);
        at::Tensor& o = param(p, h.output_weight);
        for (int64_t g = 0; g < c.num_kv_heads; ++g) {
            rotate_output_rows(v.narrow(0, h.value_row_offset + g * d, d), q);
            if (vb.defined()) rotate_vector(vb.narrow(0, h.value_row_offset + g * d, d), q);
            for (int64_t k = 0; k < group; ++k) rotate_input_columns(o.narrow(1, (g * group + k) * d, d), q);
        }
    }
    report.applied.push_back("R2 attention heads: randomized Hadamard of head_dim " + std::to_string(d) +
                             " fused into the value and output projections of every layer");
}

bool is_down_projection(const ModelConfig& c, const std::string& layer) {
    if (llama_like(c)) return ends_with(layer, ".mlp.down_proj");
    if (c.architecture == "gpt2") return ends_with(layer, ".mlp.c_proj");
    if (c.architecture == "bert") return ends_with(layer, ".output.dense") && !ends_with(layer, ".attention.output.dense");
    return false;
}

bool shares_embedding_weight(const Model& model, const QuantizableLayer& layer) {
    for (const EmbeddingLayer* e : model.embedding_layers())
        if (e != &layer && e->weight.data_ptr() == layer.weight.data_ptr()) return true;
    return false;
}

void install(QuantizableLayer& layer, const HadamardRotation& r) {
    layer.input_rotation = [r](const at::Tensor& x) { return hadamard_transform(x, r); };
}

}  // namespace

at::Tensor fold_input_rotation(const at::Tensor& weight, const HadamardRotation& r) {
    // x W_eff^T = (x H) W^T  <=>  W_eff = W H^T = W H (H symmetric), rows of W transformed.
    return inverse_hadamard_transform(weight, r);
}

std::vector<std::pair<QuantizableLayer*, HadamardRotation>> online_rotations(const QuantizedModel& q) {
    const RotationSettings& s = q.recipe().rotation;
    std::vector<std::pair<QuantizableLayer*, HadamardRotation>> out;
    if (!s.enabled()) return out;
    const Model& model = q.model();
    const ModelConfig& c = model.config();
    for (const auto& l : q.layers()) {
        QuantizableLayer& layer = l->layer();
        if (layer.kind() != LayerKind::Linear || shares_embedding_weight(model, layer)) continue;
        const bool quantized = l->weight_configured() || l->input_configured();
        const int64_t in = input_features(layer);
        if (s.method == "hadamard") {
            if (s.down_proj.value_or(true) && quantized && is_down_projection(c, layer.name))
                out.emplace_back(&layer, HadamardRotation{block_for(in), at::Tensor()});
        } else if (s.method == "rht" && quantized) {
            const int64_t b = s.block_size > 0 ? s.block_size : kernels::default_hadamard_block(in);
            if (in % b != 0)
                throw UserError(q.recipe().source + ": rotation.block_size: " + std::to_string(b) + " does not divide the " +
                                std::to_string(in) + " input features of " + layer.name);
            out.emplace_back(&layer, HadamardRotation{b, at::Tensor()});
        }
    }
    return out;
}

void install_online_rotations(const QuantizedModel& q) {
    for (auto& [layer, r] : online_rotations(q)) install(*layer, r);
}

RotationReport rotate_model(QuantizedModel& q) {
    RotationReport report;
    const RotationSettings& s = q.recipe().rotation;
    if (!s.enabled()) return report;
    Model& model = q.model();
    const ModelConfig& c = model.config();
    const std::string& src = q.recipe().source;

    // Decide everything first (UserError before any change).
    bool r1 = false, r2 = false;
    if (s.method == "hadamard") {
        std::string why_not_r1;
        if (!llama_like(c))
            why_not_r1 = c.architecture == "gpt2" || c.architecture == "bert"
                             ? "the model normalises with LayerNorm (mean subtraction and bias), which a rotation of the "
                               "residual stream does not commute with"
                             : "the model has no transformer residual stream";
        else if (c.tie_embeddings)
            why_not_r1 = "lm_head shares the embedding's weight, and R1 needs them to differ (untied)";
        if (s.residual.value_or(true)) {
            if (why_not_r1.empty())
                r1 = true;
            else if (s.residual.has_value())
                throw UserError(src + ": rotation.residual: " + why_not_r1);
            else
                report.skipped.push_back("R1 residual stream: " + why_not_r1);
        }
        const bool has_heads = !head_layouts(c).empty();
        if (s.attention_head.value_or(true)) {
            if (has_heads)
                r2 = true;
            else if (s.attention_head.has_value())
                throw UserError(src + ": rotation.attention_head: the model has no attention heads");
            else
                report.skipped.push_back("R2 attention heads: the model has no attention");
        }
    }
    const auto online = online_rotations(q);
    if (s.method == "hadamard" && s.down_proj.value_or(true) && online.empty()) {
        if (s.down_proj.has_value())
            throw UserError(src + ": rotation.down_proj: no quantized MLP down projection in this model");
        report.skipped.push_back("R4 down_proj: no quantized MLP down projection");
    }
    if (s.qk && model.attention_sites().empty())
        throw UserError(src + ": rotation.qk: the model keeps no KV cache (an encoder or a model without attention)");

    c10::InferenceMode normal_tensors(false);
    at::NoGradGuard no_grad;
    // The rotations rewrite weights in place: weights kept as stored (a read-only mapping, BF16)
    // become owned float32 first, so the rotated model equals a float32 one's.
    if (r1 || r2 || !online.empty()) model.make_parameters_float32();
    if (r1) rotate_residual(model, s.seed, report);
    if (r2) rotate_heads(model, s.seed, report);
    for (auto& [layer, r] : online) {
        // W <- W H along the inputs, so that (x H)(W H)^T = x W^T.
        assign(layer->weight, FusedRotation(input_features(*layer), r.block, at::Tensor()).rows(layer->weight.to(at::kDouble)));
        install(*layer, r);
    }
    report.online_layers = static_cast<int64_t>(online.size());
    if (!online.empty()) {
        const std::string what = s.method == "rht" ? "rht (Model Optimizer rotate-before-quantize)" : "R4 down_proj";
        report.applied.push_back(what + ": online Hadamard of the input of " + std::to_string(online.size()) +
                                 " layer" + (online.size() > 1 ? "s" : "") + " (block " + std::to_string(online.front().second.block) +
                                 " on " + online.front().first->name + ")");
    }
    if (s.qk) report.applied.push_back("R3 Q/K: online Hadamard of head_dim " + std::to_string(c.head_dim) + " before the KV cache");
    return report;
}

}  // namespace ql
