// SPDX-License-Identifier: GPL-3.0-or-later
// What a model is, independent of its weights: the architecture and its hyper-parameters, read
// from an HF config.json or given for the built-in models. Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <string>

namespace ql {

// Llama 3 style RoPE frequency scaling ("rope_scaling" in config.json); type "" = none.
struct RopeScaling {
    std::string type;                 // "", "llama3", "linear"
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int64_t original_max_positions = 8192;
};

struct ModelConfig {
    // gpt2 | llama (also mistral without sliding window, TinyLlama, SmolLM) | qwen2 | bert |
    // mlp | cnn | demo (the built-in decoder: llama-style)
    std::string architecture;
    std::string model_type;          // as written in config.json
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t num_layers = 0;
    int64_t num_heads = 0;
    int64_t num_kv_heads = 0;        // grouped-query attention; = num_heads when absent
    int64_t head_dim = 0;            // hidden_size / num_heads unless config.json says otherwise
    int64_t intermediate_size = 0;
    int64_t max_positions = 0;
    double norm_eps = 1e-5;          // layer_norm_epsilon / rms_norm_eps / layer_norm_eps
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
    bool tie_embeddings = false;
    bool attention_bias = false;     // q/k/v biases (Qwen2, GPT-2, BERT)
    std::string activation;          // gelu_new (GPT-2), silu (Llama SwiGLU), gelu (BERT)
    int64_t type_vocab_size = 0;     // BERT token types
    // Built-in teaching models.
    int64_t input_size = 0;          // MLP inputs (e.g. 784)
    int64_t num_classes = 0;         // MLP / CNN classes
    int64_t image_channels = 0, image_size = 0;  // CNN inputs
};

// Parses an HF config.json (file path). Supported model_type: gpt2, llama, mistral (no sliding
// window), qwen2, bert. Unknown model types, missing keys and inconsistent values (hidden size
// not divisible by heads, ...) are UserErrors naming the file and the key.
ModelConfig read_hf_config(const std::string& path);
ModelConfig parse_hf_config(const std::string& json_text, const std::string& source_name);

}  // namespace ql
