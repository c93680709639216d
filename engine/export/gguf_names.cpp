// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_names.h"

#include <ATen/Functions.h>

#include <regex>

#include "engine/core/errors.h"

namespace ql {

std::string gguf_architecture(const ModelConfig& config) {
    // Qwen3 runs as a Llama with q_norm / k_norm here; llama.cpp's qwen3 architecture (its
    // attn_q_norm / attn_k_norm tensors, no Q/K row permutation) is not written yet.
    if (config.qk_norm)
        throw UserError("GGUF export: model type '" + config.model_type +
                        "' (per-head q_norm / k_norm) is not supported yet (Llama-family, Qwen2 and GPT-2 decoders and BERT encoders are)");
    if (config.architecture == "llama" || config.architecture == "qwen2" || config.architecture == "gpt2" ||
        config.architecture == "bert")
        return config.architecture;
    throw UserError("GGUF export: architecture '" + config.architecture +
                    "' is not supported (Llama-family, Qwen2 and GPT-2 decoders and BERT encoders are)");
}

namespace {

// Suffix ".weight" / ".bias" of a parameter name, or "".
std::string kind_of(const std::string& name) {
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) return "weight";
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) return "bias";
    return "";
}

}  // namespace

std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, const std::string& hf_name) {
    const std::string kind = kind_of(hf_name);
    if (kind.empty()) return std::nullopt;
    const std::string module = hf_name.substr(0, hf_name.size() - kind.size() - 1);
    std::smatch m;
    if (config.architecture == "llama" || config.architecture == "qwen2") {
        const bool permute = config.architecture == "llama";
        if (module == "model.embed_tokens") return GgufTensorName{"token_embd." + kind};
        if (module == "model.norm") return GgufTensorName{"output_norm." + kind};
        if (module == "lm_head") return GgufTensorName{"output." + kind};
        static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
        if (!std::regex_match(module, m, layer)) return std::nullopt;
        const std::string blk = "blk." + m[1].str() + ".";
        const std::string part = m[2].str();
        if (part == "input_layernorm") return GgufTensorName{blk + "attn_norm." + kind};
        if (part == "post_attention_layernorm") return GgufTensorName{blk + "ffn_norm." + kind};
        if (part == "self_attn.q_proj")
            return GgufTensorName{blk + "attn_q." + kind, permute ? GgufRowPermutation::Query : GgufRowPermutation::None};
        if (part == "self_attn.k_proj")
            return GgufTensorName{blk + "attn_k." + kind, permute ? GgufRowPermutation::Key : GgufRowPermutation::None};
        if (part == "self_attn.v_proj") return GgufTensorName{blk + "attn_v." + kind};
        if (part == "self_attn.o_proj") return GgufTensorName{blk + "attn_output." + kind};
        if (part == "mlp.gate_proj") return GgufTensorName{blk + "ffn_gate." + kind};
        if (part == "mlp.up_proj") return GgufTensorName{blk + "ffn_up." + kind};
        if (part == "mlp.down_proj") return GgufTensorName{blk + "ffn_down." + kind};
        return std::nullopt;
    }
    if (config.architecture == "gpt2") {
        if (module == "transformer.wte") return GgufTensorName{"token_embd." + kind};
        if (module == "transformer.wpe") return GgufTensorName{"position_embd." + kind};
        if (module == "transformer.ln_f") return GgufTensorName{"output_norm." + kind};
        if (module == "lm_head") return GgufTensorName{"output." + kind};
        static const std::regex layer(R"(transformer\.h\.(\d+)\.(.+))");
        if (!std::regex_match(module, m, layer)) return std::nullopt;
        const std::string blk = "blk." + m[1].str() + ".";
        const std::string part = m[2].str();
        if (part == "ln_1") return GgufTensorName{blk + "attn_norm." + kind};
        if (part == "ln_2") return GgufTensorName{blk + "ffn_norm." + kind};
        if (part == "attn.c_attn") return GgufTensorName{blk + "attn_qkv." + kind};
        if (part == "attn.c_proj") return GgufTensorName{blk + "attn_output." + kind};
        if (part == "mlp.c_fc") return GgufTensorName{blk + "ffn_up." + kind};
        if (part == "mlp.c_proj") return GgufTensorName{blk + "ffn_down." + kind};
        return std::nullopt;
    }
    if (config.architecture == "bert") {
        // conversion/bert.py BertModel.filter_tensors drops the pooler and the cls.* heads; the
        // rest maps through gguf-py tensor_mapping.py (MODEL_ARCH.BERT).
        if (module == "embeddings.word_embeddings") return GgufTensorName{"token_embd." + kind};
        if (module == "embeddings.position_embeddings") return GgufTensorName{"position_embd." + kind};
        if (module == "embeddings.token_type_embeddings") return GgufTensorName{"token_types." + kind};
        if (module == "embeddings.LayerNorm") return GgufTensorName{"token_embd_norm." + kind};
        static const std::regex layer(R"(encoder\.layer\.(\d+)\.(.+))");
        if (!std::regex_match(module, m, layer)) return std::nullopt;
        const std::string blk = "blk." + m[1].str() + ".";
        const std::string part = m[2].str();
        if (part == "attention.self.query") return GgufTensorName{blk + "attn_q." + kind};
        if (part == "attention.self.key") return GgufTensorName{blk + "attn_k." + kind};
        if (part == "attention.self.value") return GgufTensorName{blk + "attn_v." + kind};
        if (part == "attention.output.dense") return GgufTensorName{blk + "attn_output." + kind};
        if (part == "attention.output.LayerNorm") return GgufTensorName{blk + "attn_output_norm." + kind};
        if (part == "intermediate.dense") return GgufTensorName{blk + "ffn_up." + kind};
        if (part == "output.dense") return GgufTensorName{blk + "ffn_down." + kind};
        if (part == "output.LayerNorm") return GgufTensorName{blk + "layer_output_norm." + kind};
        return std::nullopt;
    }
    return std::nullopt;
}

namespace {

at::Tensor check_rows(const at::Tensor& w, int64_t heads) {
    if (heads <= 0 || w.dim() < 1 || w.size(0) % (2 * heads) != 0)
        throw UserError("GGUF export: cannot permute " + std::to_string(w.dim() ? w.size(0) : 0) + " rows for " +
                        std::to_string(heads) + " heads (rows must be a multiple of 2 x heads)");
    return w.to(at::kFloat).contiguous();
}

std::vector<int64_t> split_shape(const at::Tensor& w, int64_t heads, bool pairs_first) {
    std::vector<int64_t> s = {heads, 2, w.size(0) / heads / 2};
    if (!pairs_first) std::swap(s[1], s[2]);
    for (int64_t d = 1; d < w.dim(); ++d) s.push_back(w.size(d));
    return s;
}

}  // namespace

at::Tensor gguf_permute_rows(const at::Tensor& w, int64_t heads) {
    const at::Tensor x = check_rows(w, heads);
    return x.reshape(split_shape(x, heads, true)).transpose(1, 2).contiguous().reshape(x.sizes());
}

at::Tensor gguf_unpermute_rows(const at::Tensor& w, int64_t heads) {
    const at::Tensor x = check_rows(w, heads);
    return x.reshape(split_shape(x, heads, false)).transpose(1, 2).contiguous().reshape(x.sizes());
}

}  // namespace ql
