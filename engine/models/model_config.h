// SPDX-License-Identifier: GPL-3.0-or-later
// What a model is, independent of its weights: the architecture and its hyper-parameters, read
// from an HF config.json or given for the built-in models. Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/sentence_embedding_config.h"

namespace ql {

// RoPE frequency scaling ("rope_scaling" in older config.json files, "rope_parameters" in those
// transformers >= 5 writes). type "" = none (HF "default"). Computed exactly as transformers'
// modeling_rope_utils (_compute_linear_scaling_rope_parameters, _compute_llama3_parameters).
struct RopeScaling {
    std::string type;                 // "", "linear", "llama3"
    double factor = 1.0;
    double low_freq_factor = 1.0;     // llama3 only
    double high_freq_factor = 4.0;    // llama3 only
    int64_t original_max_positions = 8192;  // llama3: original_max_position_embeddings
};

struct ModelConfig {
    // gpt2 | llama (also mistral, TinyLlama, SmolLM, Llama 2/3, Qwen3 and the built-in demo
    // decoder) | qwen2 | gemma3 (Gemma 3 text: gemma3_text) | bert | mlp | cnn. The demo decoder is a plain "llama" (so that exports of it load
    // in transformers and llama.cpp unchanged); `name` says it is the demo.
    std::string architecture;
    std::string model_type;          // as written in config.json ("mistral", "llama", ...)
    std::string name;                // display name: "quantlab-demo", "quantlab-mlp", ... or ""
    std::string dtype;               // config.json torch_dtype / dtype ("bfloat16", "float32"), "" if absent
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;         // MLP: hidden width; CNN: conv1 channels (conv2 has 2x)
    int64_t num_layers = 0;          // MLP: hidden layers (fc1..fcN, then the classifier)
    int64_t num_heads = 0;
    int64_t num_kv_heads = 0;        // grouped-query attention; = num_heads when absent
    int64_t head_dim = 0;            // hidden_size / num_heads unless config.json says otherwise
    int64_t intermediate_size = 0;
    int64_t max_positions = 0;       // learned position tables (GPT-2, BERT); RoPE: informative
    double norm_eps = 1e-5;          // layer_norm_epsilon / rms_norm_eps / layer_norm_eps
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
    int64_t sliding_window = 0;      // Mistral: key j is visible from query i iff i-w < j <= i; 0 = off
    // Gemma 3: per layer, whether it attends within sliding_window (true) or to every earlier
    // position; empty = every layer as sliding_window says.
    std::vector<bool> sliding_layers;
    bool qk_norm = false;            // Qwen3, Gemma 3: RMSNorm of each query / key head before RoPE
    // Gemma 3: the sliding layers' RoPE (rope_local_base_freq; default, unscaled), the global
    // layers using rope_theta / rope_scaling.
    double rope_local_theta = 10000.0;
    double query_pre_attn_scalar = 0;     // Gemma: scores scaled by this^-1/2 (0: head_dim^-1/2)
    double attn_logit_softcapping = 0;    // Gemma: cap * tanh(scores / cap) before the mask; 0 = off
    double final_logit_softcapping = 0;   // Gemma: the same on the logits
    bool tie_embeddings = false;     // lm_head shares the input embedding's weight tensor
    bool attention_bias = false;     // q/k/v biases (Qwen2, GPT-2, BERT, Llama attention_bias)
    bool attention_out_bias = false; // o_proj / c_proj / attention.output.dense bias
    bool mlp_bias = false;           // Llama mlp_bias; GPT-2 and BERT always have MLP biases
    std::string activation;          // gelu_new (GPT-2), silu (Llama SwiGLU), gelu (BERT), relu
    int64_t type_vocab_size = 0;     // BERT token types
    // BERT: a masked-LM head (cls.predictions.*: transform dense + activation + LayerNorm, decoder
    // tied to the word embeddings, bias), when config.json's architectures name BertForMaskedLM or
    // BertForPreTraining; forward() then gives MLM logits [B, T, vocab].
    bool mlm_head = false;
    // BERT: how token states become a sentence embedding (the folder's sentence-transformers files).
    SentenceEmbeddingConfig sentence;
    // Built-in teaching models.
    int64_t input_size = 0;          // MLP inputs (e.g. 784)
    int64_t num_classes = 0;         // MLP / CNN classes
    int64_t image_channels = 0, image_size = 0;  // CNN inputs [B, C, S, S]; S divisible by 4
};

// Parses an HF config.json (file path). Supported model_type: gpt2, llama, mistral (sliding
// window supported), qwen2 (without use_sliding_window), bert. Unknown model types, missing keys
// and inconsistent values (hidden size not divisible by heads, ...) are UserErrors naming the
// file and the key. Both RoPE layouts are read: rope_theta + rope_scaling (Hub checkpoints) and
// rope_parameters (transformers >= 5). For bert, read_hf_config also reads the sentence-transformers
// files beside config.json (sentence_embedding_config.h).
ModelConfig read_hf_config(const std::string& path);
ModelConfig parse_hf_config(const std::string& json_text, const std::string& source_name);

// Checks a config (e.g. a built-in one) for the same consistency rules; throws UserError naming
// `source_name` and the field.
void validate_model_config(const ModelConfig& config, const std::string& source_name);

}  // namespace ql
