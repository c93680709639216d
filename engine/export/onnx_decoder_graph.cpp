// SPDX-License-Identifier: GPL-3.0-or-later
// The Llama-family decoder as ONNX (onnx_export.h describes the graph).
#include <ATen/Functions.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/export/onnx_graphs.h"
#include "engine/export/onnx_linear.h"
#include "engine/models/model.h"
#include "engine/models/transformer_ops.h"
#include "engine/quant/kv_cache_quantizer.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quantized_model.h"
#include "kernels/integer_quant.h"
#include "kernels/scaled_fp8.h"

namespace ql {
namespace {

// Q/DQ of the keys (after RoPE) or values of one attention as the KV-cache quantizer fakes them
// (per tensor, static; export_onnx checked the settings), or `x` unchanged when the cache is
// not quantized.
std::string kv_qdq(OnnxGraphWriter& g, const KvCacheQuantizer* kv, const std::string& x, bool key, const std::string& prefix) {
    if (!kv || !kv->enabled()) return x;
    const KvCacheSettings& s = kv->settings();
    const float amax = (key ? kv->key_amax() : kv->value_amax()).at(0);
    const bool int8 = s.format == "int8";
    const kernels::Fp8Kind kind = s.format == "fp8_e5m2" ? kernels::Fp8Kind::E5M2 : kernels::Fp8Kind::E4M3;
    const float scale = int8 ? kernels::int_params_for_range(-amax, amax, kernels::IntFormat{8, false}).scale
                             : kernels::fp8_scale_for_amax(amax, kind);
    const std::string p = prefix + (key ? "k_cache_" : "v_cache_");
    const std::string sc = g.scalar_f32(p + "scale", scale);
    const uint8_t zero = 0;
    const OnnxType zp_type = int8 ? OnnxType::Int8 : kind == kernels::Fp8Kind::E4M3 ? OnnxType::Float8E4M3FN : OnnxType::Float8E5M2;
    const std::string zp = g.initializer(p + "zero_point", zp_type, {}, &zero, 1);
    // QuantLab's symmetric INT8 codes are [-127, 127]; QuantizeLinear saturates to -128.
    const std::string in = int8 ? g.node("Clip", {x, g.scalar_f32(p + "clip_min", -127.0f * scale), g.scalar_f32(p + "clip_max", 127.0f * scale)},
                                         p + "clipped")
                                : x;
    return g.node("DequantizeLinear", {g.node("QuantizeLinear", {in, sc, zp}, p + "quantized"), sc, zp}, p + "dequantized");
}

}  // namespace

void emit_decoder_graph(OnnxGraphContext& ctx) {
    OnnxGraphWriter& g = ctx.g;
    const QuantizedModel& q = ctx.q;
    const ModelConfig& c = q.model().config();
    const std::vector<std::string> bs = {"batch", "sequence"};
    g.input(onnx_tensor_value("input_ids", OnnxType::Int64, {-1, -1}, bs));
    g.output(onnx_tensor_value("logits", OnnxType::Float, {-1, -1, c.vocab_size}, {"batch", "sequence", ""}));

    // Positions 0..S-1 for every row, and RoPE's cos / sin tables [positions, head_dim / 2].
    const std::string ids_shape = g.node("Shape", {"input_ids"}, "input_ids_shape");
    const std::string seq = g.node("Gather", {ids_shape, g.scalar_i64("one", 1)}, "sequence_length", {OnnxAttribute::of_int("axis", 0)});
    const std::string range = g.node("Range", {g.scalar_i64("zero", 0), seq, "one"}, "positions_row");
    const std::string positions =
        g.node("Expand", {g.node("Unsqueeze", {range, g.initializer_i64("axis_0", {0})}, "positions_row_2d"), ids_shape}, "position_ids");
    const int64_t table_rows = c.max_positions > 0 ? c.max_positions : 8192;
    const RopeTables rope = rope_tables(c, table_rows);
    const int64_t half = c.head_dim / 2;
    auto half_table = [&](const at::Tensor& t, const std::string& name) {
        const at::Tensor h = t.narrow(-1, 0, half).to(at::kFloat).contiguous();
        return g.initializer(name, OnnxType::Float, {table_rows, half}, h.data_ptr<float>(), static_cast<size_t>(h.numel()) * 4);
    };
    const std::string cos = half_table(rope.cos, "rope_cos"), sin = half_table(rope.sin, "rope_sin");

    const std::string embed = ctx.float_initializer("model.embed_tokens.weight");
    std::string x = g.node("Gather", {embed, "input_ids"}, "model.embed_tokens.output", {OnnxAttribute::of_int("axis", 0)});

    const float eps = static_cast<float>(c.norm_eps);
    auto rms = [&](const std::string& v, const std::string& norm) {
        return g.node("RMSNormalization", {v, ctx.float_initializer(norm + ".weight")}, norm + ".output",
                      {OnnxAttribute::of_int("axis", -1), OnnxAttribute::of_float("epsilon", eps)});
    };
    auto linear = [&](const std::string& module, const std::string& in) { return emit_onnx_linear(g, q, module, in, ctx.manifest); };
    for (int64_t i = 0; i < c.num_layers; ++i) {
        ctx.cancel.throw_if_cancelled();
        ctx.sink.progress(i, c.num_layers + 1, "write");
        const std::string p = "model.layers." + std::to_string(i) + ".";
        const std::string a = rms(x, p + "input_layernorm");
        auto rope_of = [&](const std::string& v, int64_t heads, const std::string& name) {
            return g.node("RotaryEmbedding", {v, cos, sin, positions}, name,
                          {OnnxAttribute::of_int("interleaved", 0), OnnxAttribute::of_int("num_heads", heads)});
        };
        const KvCacheQuantizer* kv = q.find_kv_cache(p + "self_attn");
        const std::string qr = rope_of(linear(p + "self_attn.q_proj", a), c.num_heads, p + "self_attn.q_rotated");
        const std::string kr = rope_of(linear(p + "self_attn.k_proj", a), c.num_kv_heads, p + "self_attn.k_rotated");
        const std::string k = kv_qdq(g, kv, kr, true, p + "self_attn.");
        const std::string v = kv_qdq(g, kv, linear(p + "self_attn.v_proj", a), false, p + "self_attn.");
        const std::string att = g.node("Attention", {qr, k, v}, p + "self_attn.attention",
                                       {OnnxAttribute::of_int("is_causal", 1), OnnxAttribute::of_int("q_num_heads", c.num_heads),
                                        OnnxAttribute::of_int("kv_num_heads", c.num_kv_heads),
                                        OnnxAttribute::of_float("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim))))});
        x = g.node("Add", {x, linear(p + "self_attn.o_proj", att)}, p + "attention_residual");
        const std::string m = rms(x, p + "post_attention_layernorm");
        const std::string gate = linear(p + "mlp.gate_proj", m);
        const std::string silu = g.node("Mul", {gate, g.node("Sigmoid", {gate}, p + "mlp.gate_sigmoid")}, p + "mlp.gate_silu");
        const std::string h = g.node("Mul", {silu, linear(p + "mlp.up_proj", m)}, p + "mlp.hidden");
        x = g.node("Add", {x, linear(p + "mlp.down_proj", h)}, p + "output");
        ctx.release({p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj", p + "self_attn.o_proj", p + "mlp.gate_proj",
                     p + "mlp.up_proj", p + "mlp.down_proj"});
    }
    const std::string final_norm = rms(x, "model.norm");
    LayerQuantizer* head = q.find("lm_head");
    const bool head_plain = !head || (!head->weight_enabled() && !head->input_enabled() && !head->pre_quant_scale().defined());
    if (c.tie_embeddings && head_plain) {
        // logits = h E^T without a transposed copy of E: Gemm on [B*S, H] rows, then back to 3-D.
        const std::string rows = g.node("Reshape", {final_norm, g.initializer_i64("rows_shape", {-1, c.hidden_size})}, "lm_head.rows");
        const std::string y = g.node("Gemm", {rows, embed}, "lm_head.rows_output", {OnnxAttribute::of_int("transB", 1)});
        const std::string shape = g.node("Concat", {ids_shape, g.initializer_i64("vocab_dim", {c.vocab_size})}, "logits_shape",
                                         {OnnxAttribute::of_int("axis", 0)});
        g.node("Reshape", {y, shape}, "logits");
    } else {
        g.node("Identity", {linear("lm_head", final_norm)}, "logits");
    }
    ctx.sink.progress(c.num_layers + 1, c.num_layers + 1, "write");
}

}  // namespace ql
