// SPDX-License-Identifier: GPL-3.0-or-later
// A GGUF file's metadata as a QuantLab ModelConfig: the inverse of engine/export/
// gguf_model_metadata.h, reading the keys llama.cpp's converter writes (gguf-py/gguf/constants.py
// Keys.LLM / Keys.Attention / Keys.Rope; llama.cpp src/llama-model.cpp load_hparams for their
// defaults):
//   general.architecture            llama | qwen2 | gpt2 | bert (others: UserError naming the key)
//   <arch>.embedding_length         hidden_size          <arch>.block_count          num_layers
//   <arch>.feed_forward_length      intermediate_size    <arch>.context_length       max_positions
//   <arch>.attention.head_count     num_heads            <arch>.attention.head_count_kv  num_kv_heads
//   <arch>.attention.key_length     head_dim (default embedding_length / head_count; value_length
//                                   must agree)
//   <arch>.rope.dimension_count     must equal head_dim (partial rotary embeddings are not supported)
//   <arch>.rope.freq_base           rope_theta (default 10000)
//   <arch>.rope.scaling.type        none | linear (with rope.scaling.factor); others refused
//   <arch>.attention.layer_norm_rms_epsilon (llama, qwen2) / .layer_norm_epsilon (gpt2)
//   <arch>.vocab_size               else the rows of token_embd.weight
// bert: attention.layer_norm_epsilon, attention.causal (true refused), pooling_type (1 mean, 2
// cls, 3 last; absent = mean), type_vocab_size = rows of token_types.weight (must equal
// tokenizer.ggml.token_type_count), max_positions default = rows of position_embd.weight.
// Per-layer arrays (head_count, feed_forward_length as arrays) are accepted when every layer
// has the same value. Which optional parts the model has comes from its tensors: output.weight
// absent = tied embeddings; attn_q.bias / attn_output.bias / ffn_up.bias = the bias flags.
// Every problem is a UserError naming the file and the key or tensor.
#pragma once

#include <string>

#include "engine/io/gguf_file.h"
#include "engine/models/model_config.h"

namespace ql {

ModelConfig gguf_model_config(const GgufFile& file);

}  // namespace ql
