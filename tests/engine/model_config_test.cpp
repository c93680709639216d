// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/models/model_config.h"

namespace ql {
namespace {

using json = nlohmann::json;

json llama_json() {
    return json::parse(R"({"model_type": "llama", "vocab_size": 128, "hidden_size": 64,
        "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 256, "rms_norm_eps": 1e-6})");
}

std::string error_of(const json& j) {
    try {
        parse_hf_config(j.dump(), "cfg/config.json");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(ModelConfig, ReadsLlamaWithDefaultsFromTransformers) {
    const ModelConfig c = parse_hf_config(llama_json().dump(), "x");
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.num_kv_heads, 2);
    EXPECT_EQ(c.activation, "silu");
    EXPECT_FALSE(c.tie_embeddings);
    EXPECT_EQ(c.rope_theta, 10000.0);
    EXPECT_EQ(c.rope_scaling.type, "");
    EXPECT_FALSE(c.attention_bias);
}

TEST(ModelConfig, ReadsBothRopeLayouts) {
    json legacy = llama_json();
    legacy["rope_theta"] = 500000.0;
    legacy["rope_scaling"] = {{"type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    json v5 = llama_json();
    v5["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 32.0},
                             {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                             {"original_max_position_embeddings", 8192}};
    for (const json& j : {legacy, v5}) {
        const ModelConfig c = parse_hf_config(j.dump(), "x");
        EXPECT_EQ(c.rope_theta, 500000.0);
        EXPECT_EQ(c.rope_scaling.type, "llama3");
        EXPECT_EQ(c.rope_scaling.factor, 32.0);
        EXPECT_EQ(c.rope_scaling.original_max_positions, 8192);
    }
    json fallback = llama_json();  // transformers: original_max_position_embeddings defaults to max_position_embeddings
    fallback["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
    EXPECT_EQ(parse_hf_config(fallback.dump(), "x").rope_scaling.original_max_positions, 256);
    json plain = llama_json();
    plain["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
    EXPECT_EQ(parse_hf_config(plain.dump(), "x").rope_theta, 1e6);
}

TEST(ModelConfig, UnknownModelTypeNamesFileKeyAndTheSupportedTypes) {
    json j = llama_json();
    j["model_type"] = "mamba";
    const std::string e = error_of(j);
    EXPECT_NE(e.find("cfg/config.json: key 'model_type': 'mamba' is not supported"), std::string::npos) << e;
    EXPECT_NE(e.find("gpt2, llama, mistral, qwen2, qwen3, gemma3_text, bert"), std::string::npos) << e;
    j.erase("model_type");
    EXPECT_NE(error_of(j).find("key 'model_type': missing"), std::string::npos);
}

TEST(ModelConfig, MissingRequiredKeyIsNamed) {
    for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}) {
        json j = llama_json();
        j.erase(key);
        EXPECT_EQ(error_of(j), "cfg/config.json: key '" + std::string(key) + "': missing (required for this model type)");
    }
    const json gpt2 = json::parse(R"({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4})");
    EXPECT_EQ(error_of(gpt2), "cfg/config.json: key 'n_positions': missing (required for this model type)");
    json null_value = llama_json();
    null_value["hidden_size"] = nullptr;
    EXPECT_NE(error_of(null_value).find("key 'hidden_size': missing"), std::string::npos);
}

TEST(ModelConfig, WrongValueTypesAreNamed) {
    json j = llama_json();
    j["hidden_size"] = "64";
    EXPECT_EQ(error_of(j), "cfg/config.json: key 'hidden_size': expected an integer, got \"64\"");
    j = llama_json();
    j["num_hidden_layers"] = 2.5;
    EXPECT_NE(error_of(j).find("key 'num_hidden_layers': expected an integer"), std::string::npos);
    j = llama_json();
    j["tie_word_embeddings"] = 1;
    EXPECT_NE(error_of(j).find("key 'tie_word_embeddings': expected true or false"), std::string::npos);
}

TEST(ModelConfig, NonDivisibleHeadsAreRejected) {
    json j = llama_json();
    j["num_attention_heads"] = 5;
    EXPECT_EQ(error_of(j), "cfg/config.json: key 'num_attention_heads': hidden_size 64 is not divisible by "
                           "num_attention_heads 5");
    j = llama_json();
    j["num_key_value_heads"] = 3;
    EXPECT_NE(error_of(j).find("num_attention_heads 4 is not divisible by num_key_value_heads 3"), std::string::npos);
    j = llama_json();  // an explicit head_dim need not divide hidden_size (Mistral-style)
    j["num_attention_heads"] = 5;
    j["num_key_value_heads"] = 5;
    j["head_dim"] = 32;
    EXPECT_EQ(parse_hf_config(j.dump(), "x").head_dim, 32);
    const json bert = json::parse(R"({"model_type": "bert", "vocab_size": 100, "hidden_size": 30,
        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32})");
    EXPECT_NE(error_of(bert).find("hidden_size 30 is not divisible by num_attention_heads 4"), std::string::npos);
}

TEST(ModelConfig, MistralSlidingWindowIsSupportedAndQwen2SlidingWindowRejected) {
    json m = llama_json();
    m["model_type"] = "mistral";
    m["sliding_window"] = 4096;
    const ModelConfig c = parse_hf_config(m.dump(), "x");
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.sliding_window, 4096);
    m["sliding_window"] = nullptr;
    EXPECT_EQ(parse_hf_config(m.dump(), "x").sliding_window, 0);
    json q = llama_json();
    q["model_type"] = "qwen2";
    q["sliding_window"] = 4096;  // ignored unless use_sliding_window, as in transformers
    EXPECT_EQ(parse_hf_config(q.dump(), "x").sliding_window, 0);
    EXPECT_TRUE(parse_hf_config(q.dump(), "x").attention_bias);
    q["use_sliding_window"] = true;
    EXPECT_EQ(error_of(q), "cfg/config.json: key 'use_sliding_window': Qwen2 sliding-window layers are not supported");
}

TEST(ModelConfig, UnsupportedRopeAndActivationAreNamed) {
    json j = llama_json();
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    EXPECT_EQ(error_of(j), "cfg/config.json: key 'rope_scaling.rope_type': 'yarn' is not supported (default, linear, llama3)");
    j = llama_json();
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0}};
    EXPECT_EQ(error_of(j), "cfg/config.json: key 'rope_scaling.low_freq_factor': missing (required for this model type)");
    j = llama_json();
    j["hidden_act"] = "mish";
    EXPECT_NE(error_of(j).find("'mish' is not supported"), std::string::npos);
    j = llama_json();
    j["partial_rotary_factor"] = 0.5;
    EXPECT_NE(error_of(j).find("key 'partial_rotary_factor'"), std::string::npos);
}

TEST(ModelConfig, MalformedJsonIsAUserError) {
    for (const std::string text : {"{\"model_type\": \"llama\",", "", "[1, 2]", "{\"model_type\": llama}"}) {
        try {
            parse_hf_config(text, "cfg/config.json");
            ADD_FAILURE() << text;
        } catch (const UserError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("cfg/config.json: ", 0), 0u) << e.what();
        }
    }
    EXPECT_THROW(read_hf_config("/nonexistent/config.json"), UserError);
}

TEST(ModelConfig, Gpt2AndBertDefaults) {
    const ModelConfig g = parse_hf_config(
        R"({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64,
            "n_inner": null})", "x");
    EXPECT_EQ(g.intermediate_size, 128);
    EXPECT_TRUE(g.tie_embeddings);
    EXPECT_EQ(g.activation, "gelu_new");
    EXPECT_EQ(g.norm_eps, 1e-5);
    const ModelConfig b = parse_hf_config(
        R"({"model_type": "bert", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32})", "x");
    EXPECT_EQ(b.type_vocab_size, 2);
    EXPECT_EQ(b.norm_eps, 1e-12);
    EXPECT_EQ(b.activation, "gelu");
    EXPECT_THROW(parse_hf_config(R"({"model_type": "bert", "vocab_size": 100, "hidden_size": 32,
        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32,
        "position_embedding_type": "relative_key"})", "x"), UserError);
}

}  // namespace
}  // namespace ql
