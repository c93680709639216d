// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/hf_config_json.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace ql {

std::string hf_config_json(const ModelConfig& c, std::optional<int32_t> bos_id, std::optional<int32_t> eos_id) {
    nlohmann::json j;
    if (c.architecture == "gpt2") {
        j = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"},        {"vocab_size", c.vocab_size},
             {"n_embd", c.hidden_size},               {"n_layer", c.num_layers},      {"n_head", c.num_heads},
             {"n_positions", c.max_positions},        {"n_inner", c.intermediate_size}, {"layer_norm_epsilon", c.norm_eps},
             {"activation_function", c.activation},   {"tie_word_embeddings", c.tie_embeddings}};
    } else if (c.architecture == "llama" || c.architecture == "qwen2") {
        const bool qwen = c.architecture == "qwen2";
        j = {{"architectures", {qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
             {"model_type", c.architecture},
             {"vocab_size", c.vocab_size},
             {"hidden_size", c.hidden_size},
             {"intermediate_size", c.intermediate_size},
             {"num_hidden_layers", c.num_layers},
             {"num_attention_heads", c.num_heads},
             {"num_key_value_heads", c.num_kv_heads},
             {"head_dim", c.head_dim},
             {"max_position_embeddings", c.max_positions},
             {"rms_norm_eps", c.norm_eps},
             {"rope_theta", c.rope_theta},
             {"hidden_act", c.activation},
             {"tie_word_embeddings", c.tie_embeddings}};
        if (!qwen) {
            j["attention_bias"] = c.attention_bias;
            j["mlp_bias"] = c.mlp_bias;
        }
        if (c.rope_scaling.type == "linear") j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling.factor}};
        else if (!c.rope_scaling.type.empty())
            throw UserError("config.json: RoPE scaling '" + c.rope_scaling.type + "' is not written here");
    } else {
        throw UserError("config.json: architecture '" + c.architecture + "' has no config.json form here (llama, qwen2, gpt2)");
    }
    if (bos_id) j["bos_token_id"] = *bos_id;
    if (eos_id) j["eos_token_id"] = *eos_id;
    j["torch_dtype"] = "float32";
    return j.dump(2) + "\n";
}

}  // namespace ql
