// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/builtin_models.h"

namespace ql {

ModelConfig demo_decoder_config(int64_t vocab_size) {
    ModelConfig c;
    c.architecture = c.model_type = "llama";
    c.name = "quantlab-demo";
    c.vocab_size = vocab_size;
    c.hidden_size = 192;
    c.num_layers = 4;
    c.num_heads = 6;
    c.num_kv_heads = 2;
    c.head_dim = 32;
    c.intermediate_size = 512;
    c.max_positions = 128;
    c.norm_eps = 1e-5;
    c.rope_theta = 10000.0;
    c.activation = "silu";
    c.tie_embeddings = false;
    return c;
}

ModelConfig mlp_config(int64_t input_size, int64_t hidden, int64_t hidden_layers, int64_t classes) {
    ModelConfig c;
    c.architecture = c.model_type = "mlp";
    c.name = "quantlab-mlp";
    c.input_size = input_size;
    c.hidden_size = hidden;
    c.num_layers = hidden_layers;
    c.num_classes = classes;
    c.activation = "relu";
    return c;
}

ModelConfig cnn_config(int64_t channels, int64_t image_size, int64_t width, int64_t classes) {
    ModelConfig c;
    c.architecture = c.model_type = "cnn";
    c.name = "quantlab-cnn";
    c.image_channels = channels;
    c.image_size = image_size;
    c.hidden_size = width;
    c.num_classes = classes;
    c.activation = "relu";
    return c;
}

ModelConfig gpt2_small_config() {
    ModelConfig c;
    c.architecture = c.model_type = "gpt2";
    c.name = "gpt2-small-shape";
    c.vocab_size = 50257;
    c.hidden_size = 768;
    c.num_layers = 12;
    c.num_heads = 12;
    c.num_kv_heads = 12;
    c.head_dim = 64;
    c.intermediate_size = 3072;
    c.max_positions = 1024;
    c.norm_eps = 1e-5;
    c.activation = "gelu_new";
    c.tie_embeddings = true;
    c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    return c;
}

}  // namespace ql
