// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/model_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/whole_file.h"
#include "engine/models/model_size.h"

namespace ql {
namespace {

using json = nlohmann::json;

// Reads keys of one config.json object and names the file and key in every error.
class ConfigReader {
public:
    ConfigReader(const json& j, std::string source, std::string prefix = "")
        : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {}

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw UserError(source_ + ": key '" + prefix_ + key + "': " + what);
    }
    // Absent and JSON null are the same for HF (null = "use the default").
    const json* find(const std::string& key) const {
        auto it = j_.find(key);
        if (it == j_.end() || it->is_null()) return nullptr;
        return &*it;
    }
    bool has(const std::string& key) const { return find(key) != nullptr; }

    int64_t integer(const std::string& key) const {
        const json* v = find(key);
        if (!v) fail(key, "missing (required for this model type)");
        return as_integer(key, *v);
    }
    int64_t integer(const std::string& key, int64_t fallback) const {
        const json* v = find(key);
        return v ? as_integer(key, *v) : fallback;
    }
    double number(const std::string& key, double fallback) const {
        const json* v = find(key);
        if (!v) return fallback;
        if (!v->is_number()) fail(key, "expected a number, got " + v->dump());
        const double d = v->get<double>();
        if (!std::isfinite(d)) fail(key, "expected a finite number");
        return d;
    }
    double number(const std::string& key) const {
        if (!has(key)) fail(key, "missing (required for this model type)");
        return number(key, 0.0);
    }
    bool boolean(const std::string& key, bool fallback) const {
        const json* v = find(key);
        if (!v) return fallback;
        if (!v->is_boolean()) fail(key, "expected true or false, got " + v->dump());
        return v->get<bool>();
    }
    std::string string(const std::string& key, const std::string& fallback) const {
        const json* v = find(key);
        if (!v) return fallback;
        if (!v->is_string()) fail(key, "expected a string, got " + v->dump());
        return v->get<std::string>();
    }
    const json* object(const std::string& key) const {
        const json* v = find(key);
        if (v && !v->is_object()) fail(key, "expected an object, got " + v->dump());
        return v;
    }
    const std::string& source() const { return source_; }

private:
    int64_t as_integer(const std::string& key, const json& v) const {
        // HF writes integers; accept 64.0 too (hand-edited files) but not 64.5 or "64".
        if (v.is_number_integer()) return v.get<int64_t>();
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
        }
        fail(key, "expected an integer, got " + v.dump());
    }

    const json& j_;
    std::string source_;
    std::string prefix_;
};

void read_head_layout(const ConfigReader& r, ModelConfig& c, const char* heads_key, const char* hidden_key) {
    c.num_kv_heads = r.integer("num_key_value_heads", c.num_heads);
    if (c.num_heads <= 0) r.fail(heads_key, "must be positive, got " + std::to_string(c.num_heads));
    c.head_dim = r.integer("head_dim", 0);
    if (c.head_dim == 0) {
        if (c.hidden_size % c.num_heads != 0)
            r.fail(heads_key, std::string(hidden_key) + " " + std::to_string(c.hidden_size) +
                                  " is not divisible by " + heads_key + " " + std::to_string(c.num_heads));
        c.head_dim = c.hidden_size / c.num_heads;
    }
}

// One RoPE parameter object ({"rope_type"|"type", "rope_theta", factor, ...}) into theta and
// scaling; `key` names it in errors.
void read_rope_object(const ConfigReader& r, const nlohmann::json& params, const std::string& key, ModelConfig& c,
                      double& theta, RopeScaling& scaling) {
    const ConfigReader p(params, r.source(), key + ".");
    theta = p.number("rope_theta", theta);
    std::string type = p.string("rope_type", p.string("type", "default"));
    if (type == "default") {
        type.clear();
    } else if (type == "linear") {
        scaling.factor = p.number("factor");
    } else if (type == "llama3") {
        scaling.factor = p.number("factor");
        scaling.low_freq_factor = p.number("low_freq_factor");
        scaling.high_freq_factor = p.number("high_freq_factor");
        // transformers' standardize_rope_params: falls back to max_position_embeddings.
        scaling.original_max_positions = p.integer("original_max_position_embeddings", c.max_positions);
        if (scaling.high_freq_factor <= scaling.low_freq_factor)
            p.fail("high_freq_factor", "must be greater than low_freq_factor");
        if (scaling.original_max_positions <= 0)
            p.fail("original_max_position_embeddings", "must be positive");
    } else {
        p.fail("rope_type", "'" + type + "' is not supported (default, linear, llama3)");
    }
    if (!type.empty() && !(scaling.factor > 0)) p.fail("factor", "must be positive");
    scaling.type = type;
}

void read_rope(const ConfigReader& r, ModelConfig& c) {
    // transformers >= 5: "rope_parameters": {"rope_type", "rope_theta", factor, ...};
    // older files: top-level "rope_theta" and "rope_scaling": {"type"|"rope_type", factor, ...}.
    const json* params = r.object("rope_parameters");
    const char* key = params ? "rope_parameters" : "rope_scaling";
    if (!params) params = r.object("rope_scaling");
    c.rope_theta = r.number("rope_theta", 10000.0);
    if (r.has("partial_rotary_factor") && r.number("partial_rotary_factor", 1.0) != 1.0)
        r.fail("partial_rotary_factor", "partial rotary embeddings are not supported (only 1.0)");
    if (!params) return;
    if (!params->contains("rope_type") && !params->contains("type") && !params->contains("rope_theta") && !params->empty())
        r.fail(key, "per-layer-type RoPE parameters are not supported");
    read_rope_object(r, *params, key, c, c.rope_theta, c.rope_scaling);
}

// Attention layer types ("full_attention" / "sliding_attention"), one per layer.
std::vector<bool> read_layer_types(const ConfigReader& r, int64_t layers) {
    const json* types = r.find("layer_types");
    if (!types->is_array()) r.fail("layer_types", "expected an array");
    if (static_cast<int64_t>(types->size()) != layers)
        r.fail("layer_types", "has " + std::to_string(types->size()) + " entries for " + std::to_string(layers) + " layers");
    std::vector<bool> sliding;
    for (const json& t : *types) {
        if (t != "full_attention" && t != "sliding_attention")
            r.fail("layer_types", "expected full_attention or sliding_attention, got " + t.dump());
        sliding.push_back(t == "sliding_attention");
    }
    return sliding;
}

ModelConfig parse_gpt2(const ConfigReader& r) {
    ModelConfig c;
    c.architecture = "gpt2";
    c.vocab_size = r.integer("vocab_size");
    c.hidden_size = r.integer("n_embd");
    c.num_layers = r.integer("n_layer");
    c.num_heads = r.integer("n_head");
    c.max_positions = r.integer("n_positions");
    c.intermediate_size = r.integer("n_inner", 4 * c.hidden_size);
    c.norm_eps = r.number("layer_norm_epsilon", 1e-5);
    c.activation = r.string("activation_function", "gelu_new");
    c.tie_embeddings = r.boolean("tie_word_embeddings", true);
    c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    if (c.num_heads <= 0) r.fail("n_head", "must be positive, got " + std::to_string(c.num_heads));
    if (c.hidden_size % c.num_heads != 0)
        r.fail("n_head", "n_embd " + std::to_string(c.hidden_size) + " is not divisible by n_head " +
                             std::to_string(c.num_heads));
    c.num_kv_heads = c.num_heads;
    c.head_dim = c.hidden_size / c.num_heads;
    if (!r.boolean("scale_attn_weights", true)) r.fail("scale_attn_weights", "false is not supported");
    if (r.boolean("scale_attn_by_inverse_layer_idx", false))
        r.fail("scale_attn_by_inverse_layer_idx", "true is not supported");
    if (r.boolean("add_cross_attention", false)) r.fail("add_cross_attention", "true is not supported");
    return c;
}

ModelConfig parse_llama_family(const ConfigReader& r, const std::string& model_type) {
    ModelConfig c;
    // Qwen3 is a Llama with q_norm / k_norm (and a plain attention_bias): architecture llama.
    c.architecture = model_type == "qwen2" ? "qwen2" : "llama";
    c.vocab_size = r.integer("vocab_size");
    c.hidden_size = r.integer("hidden_size");
    c.num_layers = r.integer("num_hidden_layers");
    c.num_heads = r.integer("num_attention_heads");
    c.intermediate_size = r.integer("intermediate_size");
    c.max_positions = r.integer("max_position_embeddings", 2048);
    read_head_layout(r, c, "num_attention_heads", "hidden_size");
    c.norm_eps = r.number("rms_norm_eps", 1e-6);
    c.activation = r.string("hidden_act", "silu");
    c.tie_embeddings = r.boolean("tie_word_embeddings", false);
    read_rope(r, c);
    if (model_type == "llama") {
        c.attention_bias = c.attention_out_bias = r.boolean("attention_bias", false);
        c.mlp_bias = r.boolean("mlp_bias", false);
    } else if (model_type == "qwen2") {
        c.attention_bias = true;  // Qwen2Attention: q/k/v with bias, o_proj without
        if (r.boolean("use_sliding_window", false))
            r.fail("use_sliding_window", "Qwen2 sliding-window layers are not supported");
    } else if (model_type == "qwen3") {
        // Qwen3Attention: q/k/v/o all with config.attention_bias; q_norm, k_norm over head_dim.
        c.attention_bias = c.attention_out_bias = r.boolean("attention_bias", false);
        c.qk_norm = true;
        if (r.boolean("use_sliding_window", false))
            r.fail("use_sliding_window", "Qwen3 sliding-window layers are not supported");
    } else {  // mistral
        c.sliding_window = r.integer("sliding_window", 0);
        if (c.sliding_window < 0) r.fail("sliding_window", "must be positive or null");
    }
    if (const json* types = r.find("layer_types")) {
        if (!types->is_array()) r.fail("layer_types", "expected an array");
        for (const json& t : *types)
            if (!t.is_string() || (t != "full_attention" && !(t == "sliding_attention" && c.sliding_window > 0)))
                r.fail("layer_types", "only full_attention layers are supported, got " + t.dump());
    }
    return c;
}

// Gemma3ForCausalLM (model_type gemma3_text; transformers' Gemma3TextConfig defaults).
ModelConfig parse_gemma3(const ConfigReader& r) {
    ModelConfig c;
    c.architecture = "gemma3";
    c.vocab_size = r.integer("vocab_size");
    c.hidden_size = r.integer("hidden_size");
    c.num_layers = r.integer("num_hidden_layers");
    c.num_heads = r.integer("num_attention_heads");
    c.intermediate_size = r.integer("intermediate_size");
    c.max_positions = r.integer("max_position_embeddings", 131072);
    c.num_kv_heads = r.integer("num_key_value_heads", 4);
    c.head_dim = r.integer("head_dim", 256);
    c.norm_eps = r.number("rms_norm_eps", 1e-6);
    c.activation = r.string("hidden_activation", r.string("hidden_act", "gelu_pytorch_tanh"));
    c.tie_embeddings = r.boolean("tie_word_embeddings", true);
    c.attention_bias = c.attention_out_bias = r.boolean("attention_bias", false);
    c.qk_norm = true;
    c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 256);
    c.attn_logit_softcapping = r.number("attn_logit_softcapping", 0);
    c.final_logit_softcapping = r.number("final_logit_softcapping", 0);
    if (c.query_pre_attn_scalar <= 0) r.fail("query_pre_attn_scalar", "must be positive");
    if (c.attn_logit_softcapping < 0) r.fail("attn_logit_softcapping", "must be positive or null");
    if (c.final_logit_softcapping < 0) r.fail("final_logit_softcapping", "must be positive or null");
    if (r.boolean("use_bidirectional_attention", false))
        r.fail("use_bidirectional_attention", "bidirectional attention is not supported");
    if (c.num_heads <= 0) r.fail("num_attention_heads", "must be positive, got " + std::to_string(c.num_heads));
    c.sliding_window = r.integer("sliding_window", 4096);
    if (c.sliding_window <= 0) r.fail("sliding_window", "must be positive");
    if (r.has("layer_types")) {
        c.sliding_layers = read_layer_types(r, c.num_layers);
    } else {
        // Older configs: every sliding_window_pattern-th layer is global (Gemma3TextConfig).
        const int64_t pattern = r.integer("sliding_window_pattern", 6);
        if (pattern <= 0) r.fail("sliding_window_pattern", "must be positive");
        for (int64_t i = 0; i < c.num_layers; ++i) c.sliding_layers.push_back((i + 1) % pattern != 0);
    }
    if (r.has("partial_rotary_factor") && r.number("partial_rotary_factor", 1.0) != 1.0)
        r.fail("partial_rotary_factor", "partial rotary embeddings are not supported (only 1.0)");
    // RoPE (Gemma3TextConfig.convert_rope_params_to_dict): global layers rope_theta (1e6) with
    // rope_scaling, sliding layers rope_local_base_freq (1e4) unscaled; transformers >= 5 writes
    // "rope_parameters": {"full_attention": {...}, "sliding_attention": {...}}.
    c.rope_theta = r.number("rope_theta", 1000000.0);
    c.rope_local_theta = r.number("rope_local_base_freq", 10000.0);
    if (const json* params = r.object("rope_parameters")) {
        const ConfigReader p(*params, r.source(), "rope_parameters.");
        for (auto it = params->begin(); it != params->end(); ++it)
            if (it.key() != "full_attention" && it.key() != "sliding_attention")
                p.fail(it.key(), "expected full_attention and sliding_attention entries");
        if (const json* full = p.object("full_attention"))
            read_rope_object(r, *full, "rope_parameters.full_attention", c, c.rope_theta, c.rope_scaling);
        if (const json* local = p.object("sliding_attention")) {
            RopeScaling none;
            read_rope_object(r, *local, "rope_parameters.sliding_attention", c, c.rope_local_theta, none);
            if (!none.type.empty())
                p.fail("sliding_attention.rope_type", "scaled RoPE on the sliding layers is not supported");
        }
    } else if (const json* scaling = r.object("rope_scaling")) {
        read_rope_object(r, *scaling, "rope_scaling", c, c.rope_theta, c.rope_scaling);
    }
    if (!(c.rope_local_theta > 0)) r.fail("rope_local_base_freq", "must be positive");
    return c;
}

ModelConfig parse_bert(const ConfigReader& r) {
    ModelConfig c;
    c.architecture = "bert";
    c.vocab_size = r.integer("vocab_size");
    c.hidden_size = r.integer("hidden_size");
    c.num_layers = r.integer("num_hidden_layers");
    c.num_heads = r.integer("num_attention_heads");
    c.intermediate_size = r.integer("intermediate_size");
    c.max_positions = r.integer("max_position_embeddings");
    c.type_vocab_size = r.integer("type_vocab_size", 2);
    c.norm_eps = r.number("layer_norm_eps", 1e-12);
    c.activation = r.string("hidden_act", "gelu");
    c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    if (c.num_heads <= 0) r.fail("num_attention_heads", "must be positive, got " + std::to_string(c.num_heads));
    if (c.hidden_size % c.num_heads != 0)
        r.fail("num_attention_heads", "hidden_size " + std::to_string(c.hidden_size) +
                                          " is not divisible by num_attention_heads " + std::to_string(c.num_heads));
    c.num_kv_heads = c.num_heads;
    c.head_dim = c.hidden_size / c.num_heads;
    const std::string positions = r.string("position_embedding_type", "absolute");
    if (positions != "absolute") r.fail("position_embedding_type", "'" + positions + "' is not supported (absolute)");
    if (r.boolean("is_decoder", false)) r.fail("is_decoder", "BERT as a decoder is not supported");
    if (const json* arch = r.find("architectures"); arch && arch->is_array())
        for (const json& a : *arch)
            if (a.is_string() && (a.get<std::string>() == "BertForMaskedLM" || a.get<std::string>() == "BertForPreTraining"))
                c.mlm_head = true;
    return c;
}

bool known_activation(const std::string& a) {
    return a == "gelu" || a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "silu" || a == "swish" ||
           a == "relu";
}

}  // namespace

void validate_model_config(const ModelConfig& c, const std::string& source) {
    auto fail = [&](const std::string& field, const std::string& what) {
        throw UserError(source + ": " + field + ": " + what);
    };
    auto positive = [&](const char* field, int64_t v) {
        if (v <= 0) fail(field, "must be positive, got " + std::to_string(v));
    };
    const std::string& a = c.architecture;
    if (a == "mlp") {
        positive("input_size", c.input_size);
        positive("hidden_size", c.hidden_size);
        positive("num_classes", c.num_classes);
        if (c.num_layers < 0) fail("num_layers", "must not be negative");
        return;
    }
    if (a == "cnn") {
        positive("image_channels", c.image_channels);
        positive("image_size", c.image_size);
        positive("hidden_size", c.hidden_size);
        positive("num_classes", c.num_classes);
        if (c.image_size % 4 != 0) fail("image_size", "must be divisible by 4 (two 2x2 poolings)");
        return;
    }
    if (a != "gpt2" && a != "llama" && a != "qwen2" && a != "gemma3" && a != "bert")
        fail("architecture", "unknown architecture '" + a + "' (gpt2, llama, qwen2, gemma3, bert, mlp, cnn)");
    positive("vocab_size", c.vocab_size);
    positive("hidden_size", c.hidden_size);
    positive("num_layers", c.num_layers);
    positive("num_heads", c.num_heads);
    positive("num_kv_heads", c.num_kv_heads);
    positive("head_dim", c.head_dim);
    positive("intermediate_size", c.intermediate_size);
    if (!(c.norm_eps > 0)) fail("norm_eps", "must be positive");
    if (c.num_heads % c.num_kv_heads != 0)
        fail("num_key_value_heads", "num_attention_heads " + std::to_string(c.num_heads) +
                                        " is not divisible by num_key_value_heads " + std::to_string(c.num_kv_heads));
    if (!known_activation(c.activation))
        fail("activation", "'" + c.activation + "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, silu, relu)");
    if (a == "gpt2" || a == "bert") {
        positive("max_positions", c.max_positions);
        if (c.num_heads * c.head_dim != c.hidden_size) fail("head_dim", "heads x head_dim must equal hidden_size");
    } else {
        if (c.head_dim % 2 != 0) fail("head_dim", "must be even for RoPE, got " + std::to_string(c.head_dim));
        if (!(c.rope_theta > 0)) fail("rope_theta", "must be positive");
    }
    if (a == "bert") positive("type_vocab_size", c.type_vocab_size);
    if (c.sliding_window < 0) fail("sliding_window", "must not be negative");
    if (!c.sliding_layers.empty() && static_cast<int64_t>(c.sliding_layers.size()) != c.num_layers)
        fail("layer_types", "one entry per layer expected");
}

ModelConfig parse_hf_config(const std::string& text, const std::string& source) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        throw UserError(source + ": malformed JSON: " + e.what());
    }
    if (!j.is_object()) throw UserError(source + ": expected a JSON object at the top level");
    const ConfigReader r(j, source);
    if (!r.has("model_type")) r.fail("model_type", "missing (which architecture is this?)");
    const std::string type = r.string("model_type", "");
    ModelConfig c;
    if (type == "gpt2") {
        c = parse_gpt2(r);
    } else if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
        c = parse_llama_family(r, type);
    } else if (type == "gemma3_text") {
        c = parse_gemma3(r);
    } else if (type == "gemma3") {
        r.fail("model_type", "'gemma3' (Gemma3ForConditionalGeneration, text and vision) is not supported; the text-only "
                             "Gemma 3 models (gemma3_text: Gemma3ForCausalLM, e.g. gemma-3-270m, gemma-3-1b) are");
    } else if (type == "bert") {
        c = parse_bert(r);
    } else {
        r.fail("model_type", "'" + type + "' is not supported (gpt2, llama, mistral, qwen2, qwen3, gemma3_text, bert)");
    }
    c.model_type = type;
    // transformers >= 5 writes "dtype", older versions "torch_dtype"; informative (the weights'
    // own dtypes decide), used for memory estimates before the weights are opened.
    c.dtype = r.string("dtype", r.string("torch_dtype", ""));
    validate_model_config(c, source);
    // Before any tensor is allocated: a config that asks for more than the machine holds (as
    // stored: a BF16 checkpoint is mapped at 2 bytes per parameter, not converted).
    require_model_fits_memory(c, source, config_dtype_bytes(c));
    return c;
}

ModelConfig read_hf_config(const std::string& path) {
    ModelConfig c = parse_hf_config(read_whole_file(path, "model config"), path);
    if (c.architecture == "bert") {
        const size_t slash = path.find_last_of('/');
        c.sentence = read_sentence_embedding_config(slash == std::string::npos ? "." : path.substr(0, slash), c.hidden_size);
    }
    return c;
}

}  // namespace ql
