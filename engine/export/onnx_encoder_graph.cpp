// SPDX-License-Identifier: GPL-3.0-or-later
// A BERT encoder (also MiniLM sentence-embedding models) as ONNX: the inputs HF Optimum's BERT
// exports take (input_ids, attention_mask, token_type_ids: int64 [batch, sequence]) and the
// last hidden state [batch, sequence, hidden] as the output; sentence-transformers' pooling
// stays outside, as in Optimum's feature-extraction exports. Word + token-type + position
// embeddings, LayerNormalization, and per layer the attention written out in standard operators
// (scores = q k^T · head_dim^-1/2, hidden keys set to the lowest float as transformers' eager
// attention does, Softmax, · v) with every Linear as QDQ nodes (onnx_linear.h), then
// LayerNormalization, Gelu (exact or tanh, as config.json's hidden_act), LayerNormalization.
#include <ATen/Functions.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/export/onnx_graphs.h"
#include "engine/export/onnx_linear.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

void emit_encoder_graph(OnnxGraphContext& ctx) {
    OnnxGraphWriter& g = ctx.g;
    const QuantizedModel& q = ctx.q;
    const ModelConfig& c = q.model().config();
    const std::vector<std::string> bs = {"batch", "sequence"};
    for (const char* name : {"input_ids", "attention_mask", "token_type_ids"}) g.input(onnx_tensor_value(name, OnnxType::Int64, {-1, -1}, bs));
    g.output(onnx_tensor_value("last_hidden_state", OnnxType::Float, {-1, -1, c.hidden_size}, {"batch", "sequence", ""}));

    const std::string ids_shape = g.node("Shape", {"input_ids"}, "input_ids_shape");
    const std::string seq = g.node("Gather", {ids_shape, g.scalar_i64("one", 1)}, "sequence_length", {OnnxAttribute::of_int("axis", 0)});
    const std::string positions = g.node("Range", {g.scalar_i64("zero", 0), seq, "one"}, "position_ids");
    auto gather = [&](const std::string& table, const std::string& ids, const std::string& out) {
        return g.node("Gather", {ctx.float_initializer(table), ids}, out, {OnnxAttribute::of_int("axis", 0)});
    };
    const float eps = static_cast<float>(c.norm_eps);
    auto layer_norm = [&](const std::string& v, const std::string& norm) {
        return g.node("LayerNormalization", {v, ctx.float_initializer(norm + ".weight"), ctx.float_initializer(norm + ".bias")}, norm + ".output",
                      {OnnxAttribute::of_int("axis", -1), OnnxAttribute::of_float("epsilon", eps)});
    };
    // transformers' order: (words + token types) + positions.
    const std::string words = gather("embeddings.word_embeddings.weight", "input_ids", "embeddings.words");
    const std::string types = gather("embeddings.token_type_embeddings.weight", "token_type_ids", "embeddings.token_types");
    const std::string pos = gather("embeddings.position_embeddings.weight", positions, "embeddings.positions");
    std::string x = layer_norm(g.node("Add", {g.node("Add", {words, types}, "embeddings.words_types"), pos}, "embeddings.sum"), "embeddings.LayerNorm");

    // Keys a query may see: [batch, 1, 1, sequence], true for non-zero attention_mask entries.
    const std::string visible = g.node("Unsqueeze", {g.node("Cast", {"attention_mask"}, "attention_mask_bool", {OnnxAttribute::of_int("to", 9)}),
                                                     g.initializer_i64("axes_1_2", {1, 2})},
                                       "visible_keys");
    const std::string heads_shape = g.initializer_i64("heads_shape", {0, 0, c.num_heads, c.head_dim});
    const std::string hidden_shape = g.initializer_i64("hidden_shape", {0, 0, c.num_heads * c.head_dim});
    const std::string scale = g.scalar_f32("attention_scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim))));
    const std::string lowest = g.scalar_f32("attention_hidden_score", std::numeric_limits<float>::lowest());
    auto heads = [&](const std::string& v, std::vector<int64_t> perm, const std::string& name) {
        return g.node("Transpose", {g.node("Reshape", {v, heads_shape}, name + "_heads")}, name, {OnnxAttribute::of_ints("perm", std::move(perm))});
    };
    const std::string activation = c.activation == "relu" ? "Relu" : "Gelu";
    std::vector<OnnxAttribute> activation_attrs;
    if (c.activation == "gelu_new" || c.activation == "gelu_pytorch_tanh") activation_attrs.push_back(OnnxAttribute::of_string("approximate", "tanh"));
    auto linear = [&](const std::string& module, const std::string& in) { return emit_onnx_linear(g, q, module, in, ctx.manifest); };
    for (int64_t i = 0; i < c.num_layers; ++i) {
        ctx.cancel.throw_if_cancelled();
        ctx.sink.progress(i, c.num_layers, "write");
        const std::string p = "encoder.layer." + std::to_string(i) + ".";
        const std::string qh = heads(linear(p + "attention.self.query", x), {0, 2, 1, 3}, p + "attention.self.q");
        const std::string kh = heads(linear(p + "attention.self.key", x), {0, 2, 3, 1}, p + "attention.self.k_transposed");
        const std::string vh = heads(linear(p + "attention.self.value", x), {0, 2, 1, 3}, p + "attention.self.v");
        const std::string scores = g.node("Mul", {g.node("MatMul", {qh, kh}, p + "attention.self.qk"), scale}, p + "attention.self.scores");
        const std::string masked = g.node("Where", {visible, scores, lowest}, p + "attention.self.masked_scores");
        const std::string probs = g.node("Softmax", {masked}, p + "attention.self.probs", {OnnxAttribute::of_int("axis", -1)});
        const std::string context = g.node("Reshape", {g.node("Transpose", {g.node("MatMul", {probs, vh}, p + "attention.self.context_heads")},
                                                              p + "attention.self.context_tokens", {OnnxAttribute::of_ints("perm", {0, 2, 1, 3})}),
                                                       hidden_shape},
                                           p + "attention.self.context");
        const std::string a = layer_norm(g.node("Add", {linear(p + "attention.output.dense", context), x}, p + "attention.output.residual"),
                                         p + "attention.output.LayerNorm");
        const std::string inter = g.node(activation, {linear(p + "intermediate.dense", a)}, p + "intermediate.activation", activation_attrs);
        x = layer_norm(g.node("Add", {linear(p + "output.dense", inter), a}, p + "output.residual"), p + "output.LayerNorm");
        ctx.release({p + "attention.self.query", p + "attention.self.key", p + "attention.self.value", p + "attention.output.dense",
                     p + "intermediate.dense", p + "output.dense"});
    }
    g.node("Identity", {x}, "last_hidden_state");
    ctx.sink.progress(c.num_layers, c.num_layers, "write");
}

}  // namespace ql
