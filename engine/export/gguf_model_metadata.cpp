// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_model_metadata.h"

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/export/gguf_names.h"

namespace ql {

uint32_t gguf_file_type(GgmlType type) {
    switch (type) {
        case GgmlType::F32: return 0;
        case GgmlType::F16: return 1;
        case GgmlType::Q4_0: return 2;
        case GgmlType::Q4_1: return 3;
        case GgmlType::Q8_0: return 7;
        case GgmlType::Q5_0: return 8;
        case GgmlType::Q5_1: return 9;
        case GgmlType::BF16: return 32;
        case GgmlType::MXFP4: return 38;
        // A file that is all one K type: llama-quantize's mix of that base type (--pure files
        // carry the mix's number too): Q2_K 10, Q3_K_M 12, Q4_K_M 15, Q5_K_M 17, Q6_K 18,
        // IQ4_NL 25, IQ4_XS 30 (llama_ftype in llama.h; gguf-py LlamaFileType).
        case GgmlType::Q2_K: return 10;
        case GgmlType::Q3_K: return 12;
        case GgmlType::Q4_K: return 15;
        case GgmlType::Q5_K: return 17;
        case GgmlType::Q6_K: return 18;
        case GgmlType::IQ4_NL: return 25;
        case GgmlType::IQ4_XS: return 30;
        // The i-quants and ternary types: the file type whose base type each is (IQ2_XXS 19,
        // IQ2_XS 20, IQ3_XXS 23, IQ1_S 24, IQ3_S 26, IQ2_S 29 = MOSTLY_IQ2_M (whose base is
        // IQ2_S; MOSTLY_IQ2_S's base is IQ2_XS), IQ1_M 31, TQ1_0 36, TQ2_0 37).
        case GgmlType::IQ2_XXS: return 19;
        case GgmlType::IQ2_XS: return 20;
        case GgmlType::IQ3_XXS: return 23;
        case GgmlType::IQ1_S: return 24;
        case GgmlType::IQ3_S: return 26;
        case GgmlType::IQ2_S: return 29;
        case GgmlType::IQ1_M: return 31;
        case GgmlType::TQ1_0: return 36;
        case GgmlType::TQ2_0: return 37;
    }
    return 0;
}

namespace {

// conversion/bert.py BertModel.set_gguf_parameters: layer_norm_epsilon, causal false, the
// pooling of the sentence-transformers folder (base.py _try_set_pooling_type: written only when
// modules.json names a Pooling module; mean 1, cls 2, lasttoken 3 = gguf-py PoolingType), and
// set_vocab's token_type_count.
void add_bert_metadata(const ModelConfig& c, GgufModelMetadata& r) {
    GgufMetadata& md = r.metadata;
    md.emplace_back("bert.attention.layer_norm_epsilon", GgufValue::f32(static_cast<float>(c.norm_eps)));
    md.emplace_back("bert.attention.causal", GgufValue::boolean(false));
    if (c.sentence.source == "modules.json") {
        if (c.sentence.pooling.size() != 1 ||
            (c.sentence.pooling[0] != "mean" && c.sentence.pooling[0] != "cls" && c.sentence.pooling[0] != "lasttoken"))
            throw UserError("GGUF export: pooling '" + c.sentence.pooling_name() +
                            "' has no llama.cpp form (bert.pooling_type is one of mean, cls, lasttoken)");
        const std::string& p = c.sentence.pooling[0];
        md.emplace_back("bert.pooling_type", GgufValue::u32(p == "mean" ? 1 : p == "cls" ? 2 : 3));
    }
    if (c.sentence.normalize)
        r.warnings.push_back("the Normalize module is not written (GGUF has no key for it): llama.cpp normalizes "
                             "embeddings at run time (llama-embedding --embd-normalize; llama-cpp-python normalize=True)");
    md.emplace_back("tokenizer.ggml.token_type_count", GgufValue::u32(static_cast<uint32_t>(std::max<int64_t>(c.type_vocab_size, 1))));
}

}  // namespace

GgufModelMetadata gguf_model_metadata(const ModelConfig& c, const std::string& name, GgmlType file_type) {
    GgufModelMetadata r;
    const std::string arch = gguf_architecture(c);
    GgufMetadata& md = r.metadata;
    auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };
    md.emplace_back("general.architecture", GgufValue::string(arch));
    md.emplace_back("general.name", GgufValue::string(name));
    md.emplace_back("general.file_type", GgufValue::u32(gguf_file_type(file_type)));
    md.emplace_back("general.quantization_version", GgufValue::u32(2));
    const std::string a = arch + ".";
    if (arch != "bert") md.emplace_back(a + "vocab_size", u32(c.vocab_size));  // BertModel writes none
    md.emplace_back(a + "context_length", u32(c.max_positions));
    md.emplace_back(a + "embedding_length", u32(c.hidden_size));
    md.emplace_back(a + "block_count", u32(c.num_layers));
    md.emplace_back(a + "feed_forward_length", u32(c.intermediate_size));
    md.emplace_back(a + "attention.head_count", u32(c.num_heads));
    if (arch == "gpt2") {
        md.emplace_back(a + "attention.layer_norm_epsilon", GgufValue::f32(static_cast<float>(c.norm_eps)));
        return r;
    }
    if (arch == "bert") {
        add_bert_metadata(c, r);
        return r;
    }
    md.emplace_back(a + "attention.head_count_kv", u32(c.num_kv_heads));
    md.emplace_back(a + "attention.key_length", u32(c.head_dim));
    md.emplace_back(a + "attention.value_length", u32(c.head_dim));
    md.emplace_back(a + "rope.dimension_count", u32(c.head_dim));
    md.emplace_back(a + "rope.freq_base", GgufValue::f32(static_cast<float>(c.rope_theta)));
    md.emplace_back(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(c.norm_eps)));
    if (c.rope_scaling.type == "linear") {
        md.emplace_back(a + "rope.scaling.type", GgufValue::string("linear"));
        md.emplace_back(a + "rope.scaling.factor", GgufValue::f32(static_cast<float>(c.rope_scaling.factor)));
    } else if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "llama3") {
        throw UserError("GGUF export: RoPE scaling '" + c.rope_scaling.type + "' has no GGUF form here (linear and llama3 do)");
    }
    if (c.sliding_window > 0)
        r.warnings.push_back("sliding_window " + std::to_string(c.sliding_window) +
                             " is not written: llama.cpp's llama architecture attends to the full context "
                             "(as convert_hf_to_gguf.py does for Mistral)");
    return r;
}

std::vector<float> gguf_llama3_rope_factors(const ModelConfig& c) {
    const RopeScaling& s = c.rope_scaling;
    const int64_t dim = c.head_dim;
    const double pi = 3.14159265358979323846;
    const double low_wavelen = static_cast<double>(s.original_max_positions) / s.low_freq_factor;
    const double high_wavelen = static_cast<double>(s.original_max_positions) / s.high_freq_factor;
    std::vector<float> out;
    for (int64_t i = 0; i < dim; i += 2) {
        // The frequency in float32 as torch computes base ** (arange / dim).
        const float freq = 1.0f / std::pow(static_cast<float>(c.rope_theta), static_cast<float>(i) / static_cast<float>(dim));
        const double wavelen = 2 * pi / freq;
        if (wavelen < high_wavelen)
            out.push_back(1.0f);
        else if (wavelen > low_wavelen)
            out.push_back(static_cast<float>(s.factor));
        else {
            const double smooth = (s.original_max_positions / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
            out.push_back(static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
        }
    }
    return out;
}

}  // namespace ql
