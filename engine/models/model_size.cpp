// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/model_size.h"

#include <limits>
#include <utility>
#include <vector>

#include "engine/core/allocation_limit.h"

namespace ql {
namespace {

using Count = std::optional<uint64_t>;

Count u(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

Count mul(Count a, Count b) { return a && b ? checked_product({*a, *b}) : std::nullopt; }
Count add(Count a, Count b) { return checked_sum(a, b); }
Count linear(Count in, Count out, bool bias) { return add(mul(in, out), bias ? out : Count(0)); }

// One transformer block of each architecture, as its constructor registers it.
Count llama_block(const ModelConfig& c) {
    const Count h = u(c.hidden_size), q = mul(u(c.num_heads), u(c.head_dim)), kv = mul(u(c.num_kv_heads), u(c.head_dim));
    const Count m = u(c.intermediate_size);
    Count n = mul(c.architecture == "gemma3" ? 4 : 2, h);  // the block's norms (weights only; Gemma 3: four)
    if (c.qk_norm) n = add(n, mul(2, u(c.head_dim)));  // q_norm, k_norm
    n = add(n, linear(h, q, c.attention_bias));
    n = add(n, linear(h, kv, c.attention_bias));
    n = add(n, linear(h, kv, c.attention_bias));
    n = add(n, linear(q, h, c.attention_out_bias));
    n = add(n, linear(h, m, c.mlp_bias));
    n = add(n, linear(h, m, c.mlp_bias));
    return add(n, linear(m, h, c.mlp_bias));
}

Count gpt2_block(const ModelConfig& c) {
    const Count h = u(c.hidden_size), m = u(c.intermediate_size);
    Count n = mul(4, h);  // ln_1, ln_2 with biases
    n = add(n, linear(h, mul(3, h), true));
    n = add(n, linear(h, h, true));
    n = add(n, linear(h, m, true));
    return add(n, linear(m, h, true));
}

Count bert_block(const ModelConfig& c) {
    const Count h = u(c.hidden_size), m = u(c.intermediate_size);
    Count n = mul(4, h);  // attention.output.LayerNorm, output.LayerNorm with biases
    for (int k = 0; k < 4; ++k) n = add(n, linear(h, h, true));  // query, key, value, attention.output.dense
    n = add(n, linear(h, m, true));
    return add(n, linear(m, h, true));
}

}  // namespace

std::optional<uint64_t> model_parameter_count(const ModelConfig& c) {
    const std::string& a = c.architecture;
    const Count h = u(c.hidden_size), vocab = u(c.vocab_size);
    const uint64_t layers = *u(c.num_layers);
    if (a == "mlp") {  // fc1: input -> hidden, then hidden -> hidden, the last: -> classes
        if (layers == 0) return linear(u(c.input_size), u(c.num_classes), true);
        const Count n = add(linear(u(c.input_size), h, true), mul(linear(h, h, true), layers - 1));
        return add(n, linear(h, u(c.num_classes), true));
    }
    if (a == "cnn") {
        const Count side = u(c.image_size / 4);
        Count n = add(mul(mul(u(c.image_channels), h), 9), h);  // conv1 (3x3) with bias
        n = add(n, add(mul(mul(h, mul(2, h)), 9), mul(2, h)));   // conv2 (3x3) with bias
        return add(n, linear(mul(mul(mul(2, h), side), side), u(c.num_classes), true));  // fc
    }
    const Count head = c.tie_embeddings ? Count(0) : mul(h, vocab);
    if (a == "llama" || a == "qwen2" || a == "gemma3") {
        const Count n = add(mul(vocab, h), mul(llama_block(c), layers));
        return add(add(n, h), head);  // model.norm, lm_head
    }
    if (a == "gpt2") {
        Count n = add(mul(vocab, h), mul(u(c.max_positions), h));  // wte, wpe
        n = add(n, mul(gpt2_block(c), layers));
        return add(add(n, mul(2, h)), head);  // ln_f with bias, lm_head
    }
    if (a == "bert") {
        Count n = add(mul(vocab, h), mul(u(c.max_positions), h));  // word, position embeddings
        n = add(n, mul(u(c.type_vocab_size), h));
        n = add(n, mul(2, h));  // embeddings.LayerNorm
        return add(n, mul(bert_block(c), layers));
    }
    return 0;
}

int config_dtype_bytes(const ModelConfig& c) {
    if (c.dtype == "bfloat16" || c.dtype == "float16") return 2;
    if (c.dtype == "float64") return 8;
    return 4;
}

void require_model_fits_memory(const ModelConfig& c, const std::string& source, int bytes_per_parameter) {
    const Count params = model_parameter_count(c);
    const Count bytes = mul(params, Count(static_cast<uint64_t>(bytes_per_parameter)));
    if (bytes && *bytes <= physical_memory_bytes()) return;
    // The sizes under config.json's names for this model type, each with the largest value a
    // published model uses (Llama 3.1 405B: hidden 16384, 126 layers, MLP 53248, 128 heads;
    // Gemma 3: vocabulary 262144, head_dim 256; learned position tables: 8192 and below), rounded
    // up. A key far beyond its value is blamed; when none is, the model is simply too large for
    // this machine and every size is named.
    struct Size {
        std::string key;
        int64_t value;
        double largest_known;
    };
    const bool gpt2 = c.architecture == "gpt2";
    std::vector<Size> sizes;
    if (c.architecture == "mlp" || c.architecture == "cnn") {
        sizes = {{"hidden_size", c.hidden_size, 65536}, {"num_layers", c.num_layers, 1024},
                 {"input_size", c.input_size, 1 << 24}, {"image_size", c.image_size, 4096},
                 {"num_classes", c.num_classes, 1 << 20}};
    } else {
        sizes = {{"vocab_size", c.vocab_size, 262144},
                 {gpt2 ? "n_embd" : "hidden_size", c.hidden_size, 20480},
                 {gpt2 ? "n_layer" : "num_hidden_layers", c.num_layers, 128},
                 {gpt2 ? "n_inner" : "intermediate_size", c.intermediate_size, 65536}};
        if (c.architecture == "llama" || c.architecture == "qwen2" || c.architecture == "gemma3") {
            sizes.push_back({"num_attention_heads", c.num_heads, 128});
            // Named but never blamed: both default to values derived from the keys above.
            constexpr double kDerived = std::numeric_limits<double>::infinity();
            sizes.push_back({"num_key_value_heads", c.num_kv_heads, kDerived});
            sizes.push_back({"head_dim", c.head_dim, kDerived});
        } else {
            sizes.push_back({gpt2 ? "n_positions" : "max_position_embeddings", c.max_positions, 8192});
        }
        if (c.architecture == "bert") sizes.push_back({"type_vocab_size", c.type_vocab_size, 16});
    }
    const Size* blamed = nullptr;
    std::string listed;
    for (const Size& s : sizes) {
        const double ratio = static_cast<double>(s.value) / s.largest_known;
        if (ratio > 1 && (!blamed || ratio > static_cast<double>(blamed->value) / blamed->largest_known)) blamed = &s;
        listed += (listed.empty() ? "" : ", ") + s.key + " " + std::to_string(s.value);
    }
    const std::string where =
        blamed ? source + ": key '" + blamed->key + "' = " + std::to_string(blamed->value) : source + ": the model's sizes";
    require_allocatable(bytes, where,
                        "the model's " + (params ? std::to_string(*params) : std::string("more than 2^64")) +
                            " parameters (" + listed + ") as " +
                            (bytes_per_parameter == 4 ? std::string("float32") : bytes_per_parameter == 8 ? std::string("float64") : c.dtype));
}

}  // namespace ql
