// SPDX-License-Identifier: GPL-3.0-or-later
// HF parameter names -> llama.cpp GGUF tensor names, and the q/k row permutation llama.cpp needs
// for Llama (ggml-org/llama.cpp gguf-py/gguf/tensor_mapping.py, conversion/llama.py and
// conversion/gpt2.py; EXPORT.md section 2).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "engine/models/model_config.h"

namespace ql {

// llama.cpp's architecture name for a QuantLab architecture: "llama", "qwen2", "gpt2", "bert";
// UserError naming the architecture for the others (mlp, cnn).
std::string gguf_architecture(const ModelConfig& config);

// What a parameter becomes in the GGUF file.
enum class GgufRowPermutation { None, Query, Key };
struct GgufTensorName {
    std::string name;                          // "blk.0.attn_q.weight"
    GgufRowPermutation permutation = GgufRowPermutation::None;
};

// The GGUF name of HF parameter `hf_name` of a model of `config`; nullopt for parameters
// llama.cpp does not use. Llama: model.embed_tokens -> token_embd, model.layers.N.{input_layernorm
// -> attn_norm, self_attn.{q,k,v,o}_proj -> attn_{q,k,v,output}, post_attention_layernorm ->
// ffn_norm, mlp.{gate,up,down}_proj -> ffn_{gate,up,down}}, model.norm -> output_norm, lm_head ->
// output; q_proj / k_proj rows (and biases) permuted. Qwen2: the same names, no permutation
// (llama.cpp runs its RoPE in the NEOX layout, as HF does). GPT-2: wte -> token_embd, wpe ->
// position_embd, h.N.{ln_1 -> attn_norm, attn.c_attn -> attn_qkv, attn.c_proj -> attn_output,
// ln_2 -> ffn_norm, mlp.c_fc -> ffn_up, mlp.c_proj -> ffn_down}, ln_f -> output_norm. BERT
// (conversion/bert.py BertModel): embeddings.{word_embeddings -> token_embd, position_embeddings
// -> position_embd, token_type_embeddings -> token_types, LayerNorm -> token_embd_norm},
// encoder.layer.N.{attention.self.{query,key,value} -> attn_{q,k,v}, attention.output.dense ->
// attn_output, attention.output.LayerNorm -> attn_output_norm, intermediate.dense -> ffn_up,
// output.dense -> ffn_down, output.LayerNorm -> layer_output_norm}; the MLM head is not written.
std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, const std::string& hf_name);

// convert_hf_to_gguf.py's LlamaModel.permute for rows of q_proj (heads = num_heads) or k_proj
// (heads = num_kv_heads): w [heads * head_dim, ...] viewed as [heads, 2, head_dim / 2, ...],
// axes 1 and 2 swapped, so that each head's rotate_half pairs (i, i + head_dim/2) become the
// adjacent pairs (2i, 2i + 1) that llama.cpp's RoPE (LLAMA_ROPE_TYPE_NORM) rotates. Works on
// weights [rows, in] and biases [rows]; returns a contiguous float32 tensor.
at::Tensor gguf_permute_rows(const at::Tensor& w, int64_t heads);
// The inverse (for readers and tests).
at::Tensor gguf_unpermute_rows(const at::Tensor& w, int64_t heads);

}  // namespace ql
