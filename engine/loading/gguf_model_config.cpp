// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/gguf_model_config.h"

#include <cmath>

#include "engine/core/errors.h"

namespace ql {
namespace {

// Reads metadata keys of one file; every error names the file and the key.
class MetadataReader {
public:
    explicit MetadataReader(const GgufFile& f) : f_(f) {}

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw UserError(f_.path() + ": metadata '" + key + "': " + what);
    }
    const GgufValue* find(const std::string& key) const { return f_.find(key); }

    // A non-negative integer, or the common value of an integer array (per-layer values).
    int64_t integer(const std::string& key) const {
        const GgufValue* v = find(key);
        if (!v) fail(key, "missing (required for this architecture)");
        return as_integer(key, *v);
    }
    int64_t integer(const std::string& key, int64_t fallback) const {
        const GgufValue* v = find(key);
        return v ? as_integer(key, *v) : fallback;
    }
    double number(const std::string& key, double fallback) const {
        const GgufValue* v = find(key);
        if (!v) return fallback;
        double d = 0;
        try {
            d = v->as_float(key);
        } catch (const UserError&) {
            fail(key, std::string("expected FLOAT32 or FLOAT64, found ") + gguf_value_type_name(v->type));
        }
        if (!std::isfinite(d)) fail(key, "expected a finite number");
        return d;
    }
    std::string string(const std::string& key, const std::string& fallback) const {
        const GgufValue* v = find(key);
        if (!v) return fallback;
        if (v->type != GgufValueType::STRING) fail(key, std::string("expected a STRING, found ") + gguf_value_type_name(v->type));
        return v->s;
    }

private:
    int64_t as_integer(const std::string& key, const GgufValue& v) const {
        if (v.type == GgufValueType::ARRAY) {
            const int es = gguf_scalar_size(v.array_type);
            if (es == 0 || v.array_type == GgufValueType::FLOAT32 || v.array_type == GgufValueType::FLOAT64 ||
                v.array_type == GgufValueType::BOOL)
                fail(key, "expected an integer or an array of integers");
            if (v.count == 0) fail(key, "empty array");
            int64_t first = 0;
            for (uint64_t k = 0; k < v.count; ++k) {
                const int64_t x = element(v, k, es);
                if (k == 0) first = x;
                if (x != first)
                    fail(key, "layers differ (" + std::to_string(first) + " and " + std::to_string(x) +
                                  "): models with per-layer shapes are not supported");
            }
            return check(key, first);
        }
        if (v.type == GgufValueType::FLOAT32 || v.type == GgufValueType::FLOAT64 || v.type == GgufValueType::STRING ||
            v.type == GgufValueType::BOOL)
            fail(key, std::string("expected an integer, found ") + gguf_value_type_name(v.type));
        try {
            return check(key, v.as_int(key));
        } catch (const UserError&) {
            fail(key, "integer out of range");
        }
    }
    static int64_t element(const GgufValue& v, uint64_t k, int es) {
        const uint8_t* p = v.raw.data() + k * static_cast<uint64_t>(es);
        const bool is_signed = v.array_type == GgufValueType::INT8 || v.array_type == GgufValueType::INT16 ||
                               v.array_type == GgufValueType::INT32 || v.array_type == GgufValueType::INT64;
        uint64_t u = 0;
        for (int b = es - 1; b >= 0; --b) u = (u << 8) | p[b];
        if (is_signed && es < 8 && (u >> (8 * es - 1)) & 1) u |= ~uint64_t{0} << (8 * es);  // sign-extend
        return static_cast<int64_t>(u);
    }
    int64_t check(const std::string& key, int64_t x) const {
        // Shapes larger than this cannot be a model QuantLab can hold in memory; a lying file.
        if (x < 0 || x > (int64_t{1} << 31)) fail(key, "value " + std::to_string(x) + " out of range");
        return x;
    }

    const GgufFile& f_;
};

bool has_tensor(const GgufFile& f, const std::string& name) { return f.find_tensor(name) != nullptr; }

// BERT as conversion/bert.py writes it and llama.cpp's LLM_ARCH_BERT reads it: post-LayerNorm
// blocks with biases everywhere, exact GELU, learned positions (position_embd rows) and token
// types (token_types rows; tokenizer.ggml.token_type_count), bidirectional attention
// (bert.attention.causal must not be true), and the sentence pooling of bert.pooling_type
// (gguf-py PoolingType: 1 mean, 2 cls, 3 last; absent = mean, QuantLab's default for an encoder).
void read_bert(const GgufFile& f, const MetadataReader& r, ModelConfig& c) {
    c.num_kv_heads = c.num_heads;
    if (c.hidden_size % c.num_heads != 0)
        r.fail("bert.attention.head_count", "embedding_length " + std::to_string(c.hidden_size) +
                                                " is not divisible by head_count " + std::to_string(c.num_heads));
    c.head_dim = c.hidden_size / c.num_heads;
    c.norm_eps = r.number("bert.attention.layer_norm_epsilon", 1e-12);
    c.activation = "gelu";
    c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    c.tie_embeddings = false;  // no LM head: an encoder
    if (const GgufValue* causal = r.find("bert.attention.causal")) {
        if (causal->type != GgufValueType::BOOL) r.fail("bert.attention.causal", "expected a BOOL");
        if (causal->u != 0)
            r.fail("bert.attention.causal", "true: a causal BERT is not supported (BERT attends both ways)");
    }
    const GgufTensorInfo* pos = f.find_tensor("position_embd.weight");
    if (!pos || pos->ne.size() != 2) throw UserError(f.path() + ": tensor 'position_embd.weight' is missing or not 2-D (BERT's learned positions)");
    if (c.max_positions == 0) c.max_positions = pos->ne[1];
    const GgufTensorInfo* types = f.find_tensor("token_types.weight");
    if (!types || types->ne.size() != 2) throw UserError(f.path() + ": tensor 'token_types.weight' is missing or not 2-D (BERT's token types)");
    c.type_vocab_size = types->ne[1];
    if (r.integer("tokenizer.ggml.token_type_count", c.type_vocab_size) != c.type_vocab_size)
        r.fail("tokenizer.ggml.token_type_count", "differs from the rows of token_types.weight (" + std::to_string(c.type_vocab_size) + ")");
    c.sentence = SentenceEmbeddingConfig{};
    c.sentence.source = "gguf";
    if (r.find("bert.pooling_type")) {
        const int64_t p = r.integer("bert.pooling_type");
        if (p == 1) c.sentence.pooling = {"mean"};
        else if (p == 2) c.sentence.pooling = {"cls"};
        else if (p == 3) c.sentence.pooling = {"lasttoken"};
        else r.fail("bert.pooling_type", std::to_string(p) + " is not supported (1 mean, 2 cls, 3 last)");
    }
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
    const MetadataReader r(f);
    if (!r.find("general.architecture")) r.fail("general.architecture", "missing (which architecture is this?)");
    const std::string arch = r.string("general.architecture", "");
    if (arch != "llama" && arch != "qwen2" && arch != "gpt2" && arch != "bert")
        r.fail("general.architecture", "'" + arch + "' is not supported (llama, qwen2, gpt2, bert)");
    const std::string a = arch + ".";
    ModelConfig c;
    c.architecture = c.model_type = arch;
    c.name = r.string("general.name", "");
    c.hidden_size = r.integer(a + "embedding_length");
    c.num_layers = r.integer(a + "block_count");
    c.intermediate_size = r.integer(a + "feed_forward_length");
    c.num_heads = r.integer(a + "attention.head_count");
    c.max_positions = r.integer(a + "context_length", arch == "gpt2" || arch == "bert" ? 0 : 2048);
    if (c.num_heads <= 0) r.fail(a + "attention.head_count", "must be positive");
    if (const GgufTensorInfo* emb = f.find_tensor("token_embd.weight"); emb && emb->ne.size() == 2)
        c.vocab_size = r.integer(a + "vocab_size", emb->ne[1]);
    else
        c.vocab_size = r.integer(a + "vocab_size");
    c.tie_embeddings = !has_tensor(f, "output.weight");

    if (arch == "bert") {
        read_bert(f, r, c);
    } else if (arch == "gpt2") {
        c.num_kv_heads = c.num_heads;
        if (c.hidden_size % c.num_heads != 0)
            r.fail(a + "attention.head_count", "embedding_length " + std::to_string(c.hidden_size) +
                                                   " is not divisible by head_count " + std::to_string(c.num_heads));
        c.head_dim = c.hidden_size / c.num_heads;
        c.norm_eps = r.number(a + "attention.layer_norm_epsilon", 1e-5);
        c.activation = "gelu_new";  // llama.cpp's GPT-2 graph: ggml_gelu (the tanh approximation)
        c.attention_bias = c.attention_out_bias = c.mlp_bias = true;
    } else {
        c.num_kv_heads = r.integer(a + "attention.head_count_kv", c.num_heads);
        if (c.num_kv_heads <= 0) r.fail(a + "attention.head_count_kv", "must be positive");
        const int64_t default_dim = c.hidden_size % c.num_heads == 0 ? c.hidden_size / c.num_heads : 0;
        c.head_dim = r.integer(a + "attention.key_length", default_dim);
        if (c.head_dim == 0)
            r.fail(a + "attention.head_count", "embedding_length " + std::to_string(c.hidden_size) +
                                                   " is not divisible by head_count and no attention.key_length is given");
        if (r.integer(a + "attention.value_length", c.head_dim) != c.head_dim)
            r.fail(a + "attention.value_length", "differs from attention.key_length (not supported)");
        if (r.integer(a + "rope.dimension_count", c.head_dim) != c.head_dim)
            r.fail(a + "rope.dimension_count", "is not the head size " + std::to_string(c.head_dim) +
                                                   ": partial rotary embeddings are not supported");
        c.rope_theta = r.number(a + "rope.freq_base", 10000.0);
        c.norm_eps = r.number(a + "attention.layer_norm_rms_epsilon", 1e-5);
        c.activation = "silu";
        const std::string scaling = r.string(a + "rope.scaling.type", "none");
        if (scaling == "linear") {
            c.rope_scaling.type = "linear";
            c.rope_scaling.factor = r.number(a + "rope.scaling.factor", 1.0);
            if (!(c.rope_scaling.factor > 0)) r.fail(a + "rope.scaling.factor", "must be positive");
        } else if (scaling != "none") {
            r.fail(a + "rope.scaling.type", "'" + scaling + "' is not supported (none, linear)");
        }
        if (has_tensor(f, "rope_freqs.weight"))
            throw UserError(f.path() + ": tensor 'rope_freqs.weight': per-frequency RoPE factors (Llama 3.1 scaling) "
                                       "cannot be read back into a RoPE configuration; not supported");
        if (arch == "qwen2") {
            c.attention_bias = true;  // Qwen2: q/k/v with bias, o_proj without
        } else {
            c.attention_bias = has_tensor(f, "blk.0.attn_q.bias");
            c.attention_out_bias = has_tensor(f, "blk.0.attn_output.bias");
            c.mlp_bias = has_tensor(f, "blk.0.ffn_up.bias");
        }
    }
    validate_model_config(c, f.path());
    return c;
}

}  // namespace ql
