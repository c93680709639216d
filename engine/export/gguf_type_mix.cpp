// SPDX-License-Identifier: GPL-3.0-or-later
// Ported from llama.cpp src/llama-quant.cpp (llama-cpp-python 0.3.36's vendored tree); the
// branches kept are those the file types of gguf_file_types() reach for dense llama / qwen2 /
// gpt2 models and experts (no Falcon, no GLM5-next), in llama.cpp's order so that they can be read
// side by side with it.
#include "engine/export/gguf_type_mix.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>

#include "engine/core/errors.h"

namespace ql {

const std::vector<GgufFileType>& gguf_file_types() {
    static const std::vector<GgufFileType> types = {
        {"f32", 0, GgmlType::F32, "ALL_F32", false},
        {"f16", 1, GgmlType::F16, "MOSTLY_F16", false},
        {"q4_0", 2, GgmlType::Q4_0, "MOSTLY_Q4_0", false},
        {"q4_1", 3, GgmlType::Q4_1, "MOSTLY_Q4_1", false},
        {"q8_0", 7, GgmlType::Q8_0, "MOSTLY_Q8_0", false},
        {"q5_0", 8, GgmlType::Q5_0, "MOSTLY_Q5_0", false},
        {"q5_1", 9, GgmlType::Q5_1, "MOSTLY_Q5_1", false},
        {"q2_k", 10, GgmlType::Q2_K, "MOSTLY_Q2_K", true},
        {"q3_k_s", 11, GgmlType::Q3_K, "MOSTLY_Q3_K_S", true},
        {"q3_k_m", 12, GgmlType::Q3_K, "MOSTLY_Q3_K_M", true},
        {"q3_k_l", 13, GgmlType::Q3_K, "MOSTLY_Q3_K_L", true},
        {"q4_k_s", 14, GgmlType::Q4_K, "MOSTLY_Q4_K_S", true},
        {"q4_k_m", 15, GgmlType::Q4_K, "MOSTLY_Q4_K_M", true},
        {"q5_k_s", 16, GgmlType::Q5_K, "MOSTLY_Q5_K_S", true},
        {"q5_k_m", 17, GgmlType::Q5_K, "MOSTLY_Q5_K_M", true},
        {"q6_k", 18, GgmlType::Q6_K, "MOSTLY_Q6_K", true},
        {"iq2_xxs", 19, GgmlType::IQ2_XXS, "MOSTLY_IQ2_XXS", true},
        {"iq2_xs", 20, GgmlType::IQ2_XS, "MOSTLY_IQ2_XS", true},
        {"q2_k_s", 21, GgmlType::Q2_K, "MOSTLY_Q2_K_S", true},
        {"iq3_xs", 22, GgmlType::IQ3_S, "MOSTLY_IQ3_XS", true},
        {"iq3_xxs", 23, GgmlType::IQ3_XXS, "MOSTLY_IQ3_XXS", true},
        {"iq1_s", 24, GgmlType::IQ1_S, "MOSTLY_IQ1_S", true},
        {"iq4_nl", 25, GgmlType::IQ4_NL, "MOSTLY_IQ4_NL", true},
        {"iq3_s", 26, GgmlType::IQ3_S, "MOSTLY_IQ3_S", true},
        {"iq3_m", 27, GgmlType::IQ3_S, "MOSTLY_IQ3_M", true},
        {"iq2_s", 28, GgmlType::IQ2_XS, "MOSTLY_IQ2_S", true},
        {"iq2_m", 29, GgmlType::IQ2_S, "MOSTLY_IQ2_M", true},
        {"iq4_xs", 30, GgmlType::IQ4_XS, "MOSTLY_IQ4_XS", true},
        {"iq1_m", 31, GgmlType::IQ1_M, "MOSTLY_IQ1_M", true},
        {"bf16", 32, GgmlType::BF16, "MOSTLY_BF16", false},
        {"tq1_0", 36, GgmlType::TQ1_0, "MOSTLY_TQ1_0", true},
        {"tq2_0", 37, GgmlType::TQ2_0, "MOSTLY_TQ2_0", true},
        {"mxfp4_moe", 38, GgmlType::MXFP4, "MOSTLY_MXFP4_MOE", true},
    };
    return types;
}

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// llama_ftype ids used by the rules below.
enum Ftype : uint32_t {
    kQ4_0 = 2, kQ5_0 = 8, kQ2_K = 10, kQ3_K_S = 11, kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15,
    kQ5_K_S = 16, kQ5_K_M = 17, kQ6_K = 18, kIQ2_XXS = 19, kIQ2_XS = 20, kQ2_K_S = 21, kIQ3_XS = 22, kIQ3_XXS = 23,
    kIQ1_S = 24, kIQ4_NL = 25, kIQ3_S = 26, kIQ3_M = 27, kIQ2_S = 28, kIQ2_M = 29, kIQ4_XS = 30, kIQ1_M = 31,
    kTQ1_0 = 36, kTQ2_0 = 37, kMXFP4_MOE = 38,
};

// The 1- and 2-bit i-quant mixes (one branch of llama_tensor_get_type_impl).
bool is_low_bit_mix(uint32_t f) {
    return f == kIQ2_XXS || f == kIQ2_XS || f == kIQ1_S || f == kIQ2_S || f == kIQ2_M || f == kIQ1_M;
}

std::string type_text(GgmlType t) { return ggml_type_name(t); }

int n_dims(const std::vector<int64_t>& ne) {  // ggml_n_dims
    for (int i = static_cast<int>(ne.size()) - 1; i >= 1; --i)
        if (ne[static_cast<size_t>(i)] > 1) return i + 1;
    return 1;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

enum class Category { TokenEmbd, AttentionQ, AttentionV, AttentionK, AttentionQkv, AttentionKvB, AttentionOutput,
                      FfnUp, FfnGate, FfnDown, Output, Other };

Category category_of(const std::string& n) {  // tensor_get_category
    if (n == "output.weight") return Category::Output;
    if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(n, "attn_qkv.weight")) return Category::AttentionQkv;
    if (contains(n, "attn_kv_b.weight")) return Category::AttentionKvB;
    if (contains(n, "attn_v.weight")) return Category::AttentionV;
    if (contains(n, "attn_k.weight")) return Category::AttentionK;
    if (contains(n, "attn_q.weight")) return Category::AttentionQ;
    if (contains(n, "attn_output.weight")) return Category::AttentionOutput;
    if (contains(n, "ffn_up")) return Category::FfnUp;
    if (contains(n, "ffn_gate")) return Category::FfnGate;
    if (contains(n, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

bool is_attn_v(Category c) {  // category_is_attn_v
    return c == Category::AttentionV || c == Category::AttentionQkv || c == Category::AttentionKvB;
}

bool allows_quantization(const GgufMixOptions& o, const GgufMixTensor& t) {  // tensor_allows_quantization
    if (n_dims(t.ne) < 2) return false;
    const std::string& name = t.name;
    bool q = name.size() >= 6 && name.rfind("weight") == name.size() - 6;
    q &= !contains(name, "_norm.weight");
    q &= o.quantize_output || name != "output.weight";
    q &= !contains(name, "ffn_gate_inp.weight");
    q &= !contains(name, "ffn_gate_tid2eid.weight");
    q &= !contains(name, "altup") && !contains(name, "laurel") && !contains(name, "per_layer_model_proj");
    q &= name != "position_embd.weight" && name != "token_types.weight";  // LLM_TN POS_EMBD / TOKEN_TYPES
    q &= !contains(name, "ssm_conv1d") && !contains(name, "shortconv.conv.weight");
    q &= !contains(name, "indexer.k_proj.weight") && !contains(name, "indexer.q_proj.weight");
    for (const char* rwkv : {"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
                             "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
                             "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
                             "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight"})
        q &= !contains(name, rwkv);
    q &= !contains(name, "attn_rel_b.weight");
    for (const char* mm : {".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
                           ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"})
        q &= !contains(name, mm);
    return q;
}

struct State {  // quantize_state_impl's counters
    int n_attention_wv = 0, n_ffn_down = 0, n_ffn_gate = 0, n_ffn_up = 0;
    int i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
    bool has_imatrix = false, has_tied_embeddings = true;
};

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

std::string more_bits_text(int i, int n) {
    return "use_more_bits(" + std::to_string(i) + ", " + std::to_string(n) + ")";
}

// llama_tensor_get_type_impl for the supported file types. `why` says which rule decided.
GgmlType mix_type(State& qs, GgmlType new_type, const GgufMixTensor& t, const GgufMixModel& m, uint32_t ftype,
                  Category category, const GgufMixOptions& o, std::string& why) {
    const int n_gqa = m.n_head_kv > 0 ? static_cast<int>(m.n_head / m.n_head_kv) : 1;
    const bool is_70b = m.architecture == "llama" && m.n_layer == 80 && m.n_head != m.n_head_kv;  // LLM_TYPE_70B
    const int n_expert = static_cast<int>(m.n_expert);
    const std::string base = type_text(new_type);
    why = "base type " + base;
    if (category == Category::Output || (qs.has_tied_embeddings && category == Category::TokenEmbd)) {
        const char* what = category == Category::Output ? "output" : "token_embd (tied: the output)";
        if (o.output_tensor_type) {
            why = std::string(what) + ": --output-tensor-type";
            return *o.output_tensor_type;
        }
        const int64_t nx = t.ne[0];
        const int64_t qk_k = ggml_block_size(new_type);
        if (ftype == kMXFP4_MOE) {
            why = std::string(what) + ": Q8_0 in MXFP4_MOE";
            return GgmlType::Q8_0;
        }
        if (nx % qk_k != 0) {
            why = std::string(what) + ": ne[0] " + std::to_string(nx) + " not a multiple of " + std::to_string(qk_k) + " -> Q8_0";
            return GgmlType::Q8_0;
        }
        if (is_low_bit_mix(ftype) || ftype == kIQ3_XXS) {
            why = std::string(what) + ": Q5_K in the IQ1 / IQ2 / IQ3_XXS mixes";
            return GgmlType::Q5_K;
        }
        if (new_type != GgmlType::Q8_0) {
            why = std::string(what) + ": Q6_K";
            return GgmlType::Q6_K;
        }
        why = std::string(what) + ": Q8_0 stays";
        return new_type;
    }
    if (ftype == kMXFP4_MOE) {
        const bool experts = t.ne.size() > 2 && t.ne[2] > 1;
        why = experts ? "MXFP4_MOE: expert tensor" : "MXFP4_MOE: not an expert tensor -> Q8_0";
        return experts ? GgmlType::MXFP4 : GgmlType::Q8_0;
    }
    if (category == Category::TokenEmbd) {
        if (o.token_embedding_type) {
            why = "token_embd: --token-embedding-type";
            return *o.token_embedding_type;
        }
        if (ftype == kIQ2_XXS || ftype == kIQ2_XS || ftype == kIQ1_S || ftype == kIQ1_M) {
            why = "token_embd: Q2_K in the IQ1 / IQ2_XXS / IQ2_XS mixes";
            return GgmlType::Q2_K;
        }
        if (ftype == kIQ2_S || ftype == kIQ2_M || ftype == kIQ3_XXS) {
            why = "token_embd: IQ3_S in the IQ2_S / IQ2_M / IQ3_XXS mixes";
            return GgmlType::IQ3_S;
        }
        if (ftype == kTQ1_0 || ftype == kTQ2_0) {
            why = "token_embd: Q4_K in the ternary mixes";
            return GgmlType::Q4_K;
        }
        why = "token_embd: base type " + base;
        return new_type;
    }
    if (is_low_bit_mix(ftype)) {
        // One branch for every category of these mixes (so ffn_gate / ffn_up counters stay put).
        const bool iq2_s = ftype == kIQ2_S || ftype == kIQ2_M;
        const GgmlType more = iq2_s ? GgmlType::IQ3_S : GgmlType::Q2_K;
        if (is_attn_v(category)) {
            const std::string at = "attn_v #" + std::to_string(qs.i_attention_wv) + " of " + std::to_string(qs.n_attention_wv);
            ++qs.i_attention_wv;
            if (n_gqa >= 4 || m.n_expert >= 4) {
                why = at + ": n_gqa >= 4 or >= 4 experts -> Q4_K";
                return GgmlType::Q4_K;
            }
            why = at + ": -> " + type_text(more);
            return more;
        }
        if (n_expert == 8 && category == Category::AttentionK) {
            why = "attn_k: 8 experts -> Q4_K";
            return GgmlType::Q4_K;
        }
        if (category == Category::FfnDown) {
            const std::string at = "ffn_down #" + std::to_string(qs.i_ffn_down) + " of " + std::to_string(qs.n_ffn_down);
            const bool first = qs.i_ffn_down < qs.n_ffn_down / 8;
            ++qs.i_ffn_down;
            why = at + (first ? ": first n/8 -> " + type_text(more) : ": base type " + base);
            return first ? more : new_type;
        }
        if (category == Category::AttentionOutput) {
            if (n_expert == 8) {
                why = "attn_output: 8 experts -> Q5_K";
                return GgmlType::Q5_K;
            }
            if (ftype == kIQ1_S || ftype == kIQ1_M) {
                why = "attn_output: IQ1 mix -> IQ2_XXS";
                return GgmlType::IQ2_XXS;
            }
            if (iq2_s) {
                why = "attn_output: IQ2_S / IQ2_M mix -> IQ3_S";
                return GgmlType::IQ3_S;
            }
        }
        why = "base type " + base;
        return new_type;
    }
    if (is_attn_v(category)) {
        const std::string at = "attn_v #" + std::to_string(qs.i_attention_wv) + " of " + std::to_string(qs.n_attention_wv);
        if (ftype == kQ2_K) {
            new_type = n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
            why = at + ": n_gqa " + std::to_string(n_gqa) + (n_gqa >= 4 ? " >= 4 -> Q4_K" : " < 4 -> Q3_K");
        } else if (ftype == kQ2_K_S && n_gqa >= 4) {
            new_type = GgmlType::Q4_K;
            why = at + ": n_gqa >= 4 -> Q4_K";
        } else if (ftype == kIQ3_XXS) {
            new_type = n_gqa >= 4 ? GgmlType::Q4_K : !qs.has_imatrix ? GgmlType::IQ3_S : GgmlType::IQ3_XXS;
            why = at + (n_gqa >= 4 ? ": n_gqa >= 4 -> Q4_K" : !qs.has_imatrix ? ": no imatrix -> IQ3_S" : ": with imatrix -> IQ3_XXS");
        } else if ((ftype == kIQ3_XS || ftype == kIQ3_S) && n_gqa >= 4) {
            new_type = GgmlType::Q4_K;
            why = at + ": n_gqa >= 4 -> Q4_K";
        } else if (ftype == kIQ3_M) {
            new_type = GgmlType::Q4_K;
            why = at + ": IQ3_M -> Q4_K";
        } else if (ftype == kQ3_K_M) {
            new_type = qs.i_attention_wv < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
            why = at + (qs.i_attention_wv < 2 ? ": one of the first 2 -> Q5_K" : ": -> Q4_K");
        } else if (ftype == kQ3_K_L) {
            new_type = GgmlType::Q5_K;
            why = at + ": Q3_K_L -> Q5_K";
        } else if ((ftype == kIQ4_NL || ftype == kIQ4_XS) && n_gqa >= 4) {
            new_type = GgmlType::Q5_K;
            why = at + ": n_gqa >= 4 -> Q5_K";
        } else if ((ftype == kQ4_K_M || ftype == kQ5_K_M) && use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) {
            new_type = GgmlType::Q6_K;
            why = at + ": " + more_bits_text(qs.i_attention_wv, qs.n_attention_wv) + " -> Q6_K";
        } else if (ftype == kQ4_K_S && qs.i_attention_wv < 4) {
            new_type = GgmlType::Q5_K;
            why = at + ": one of the first 4 -> Q5_K";
        } else {
            why = at + ": base type " + base;
        }
        if (is_70b && (new_type == GgmlType::Q3_K || new_type == GgmlType::Q4_K)) {
            new_type = GgmlType::Q5_K;
            why += "; 70B -> Q5_K";
        }
        if (n_expert == 8) {
            new_type = GgmlType::Q8_0;
            why += "; 8 experts -> Q8_0";
        }
        ++qs.i_attention_wv;
        return new_type;
    }
    if (category == Category::AttentionK || category == Category::AttentionQ) {
        const char* what = category == Category::AttentionK ? "attn_k" : "attn_q";
        if (category == Category::AttentionK && n_expert == 8) {
            why = "attn_k: 8 experts -> Q8_0";
            return GgmlType::Q8_0;
        }
        if (ftype == kIQ3_XS) {
            why = std::string(what) + ": IQ3_XS -> IQ3_XXS";
            return GgmlType::IQ3_XXS;
        }
        if (ftype == kIQ3_XXS) {
            why = std::string(what) + ": IQ3_XXS -> IQ2_S";
            return GgmlType::IQ2_S;
        }
        return new_type;
    }
    if (category == Category::FfnDown) {
        int i_layer = qs.i_ffn_down;
        const int n_layer = qs.n_ffn_down;
        if (n_expert > 1) {  // layer_info: the layer from the name
            if (std::sscanf(t.name.c_str(), "blk.%d.", &i_layer) != 1)
                throw UserError("GGUF type mix: cannot determine the layer of tensor " + t.name);
        }
        const std::string at = "ffn_down #" + std::to_string(i_layer) + " of " + std::to_string(n_layer);
        if (ftype == kQ2_K) {
            new_type = GgmlType::Q3_K;
            why = at + ": Q2_K -> Q3_K";
        } else if (ftype == kQ2_K_S) {
            if (i_layer < n_layer / 8) {
                new_type = GgmlType::Q4_K;
                why = at + ": first n/8 -> Q4_K";
            } else {
                why = at + ": base type " + base;
            }
        } else if (ftype == kIQ3_XXS && !qs.has_imatrix) {
            new_type = i_layer < n_layer / 8 ? GgmlType::Q4_K : GgmlType::Q3_K;
            why = at + (i_layer < n_layer / 8 ? ": first n/8 without imatrix -> Q4_K" : ": without imatrix -> Q3_K");
        } else if (ftype == kQ3_K_M) {
            // Not Falcon: Q5_K for the first n/16, Q4_K for the others.
            new_type = i_layer < n_layer / 16 ? GgmlType::Q5_K : GgmlType::Q4_K;
            why = at + (i_layer < n_layer / 16 ? ": first n/16 -> Q5_K" : ": -> Q4_K");
        } else if (ftype == kIQ3_M && (i_layer < n_layer / 8 || (n_expert == 8 && use_more_bits(i_layer, n_layer)))) {
            new_type = GgmlType::Q4_K;
            why = at + ": IQ3_M, first n/8 -> Q4_K";
        } else if (ftype == kQ3_K_L) {
            new_type = GgmlType::Q5_K;
            why = at + ": Q3_K_L -> Q5_K";
        } else if (ftype == kQ4_K_M) {
            if (use_more_bits(i_layer, n_layer)) {
                new_type = GgmlType::Q6_K;
                why = at + ": " + more_bits_text(i_layer, n_layer) + " -> Q6_K";
            } else {
                why = at + ": base type " + base;
            }
        } else if (i_layer < n_layer / 8 && (ftype == kIQ4_NL || ftype == kIQ4_XS) && !qs.has_imatrix) {
            new_type = GgmlType::Q5_K;
            why = at + ": first n/8 without imatrix -> Q5_K";
        } else if (ftype == kQ5_K_M && use_more_bits(i_layer, n_layer)) {
            new_type = GgmlType::Q6_K;
            why = at + ": " + more_bits_text(i_layer, n_layer) + " -> Q6_K";
        } else if (ftype == kQ4_K_S && i_layer < n_layer / 8) {
            new_type = GgmlType::Q5_K;
            why = at + ": first n/8 -> Q5_K";
        } else if ((ftype == kQ4_0 || ftype == kQ5_0) && qs.has_imatrix && i_layer < n_layer / 8) {
            new_type = ftype == kQ4_0 ? GgmlType::Q4_1 : GgmlType::Q5_1;
            why = at + ": first n/8 with imatrix -> " + type_text(new_type);
        } else {
            why = at + ": base type " + base;
        }
        ++qs.i_ffn_down;
        return new_type;
    }
    if (category == Category::AttentionOutput) {
        if (n_expert == 8) {
            if (ftype == kQ2_K || ftype == kIQ3_XS || ftype == kIQ3_XXS || ftype == kQ3_K_S || ftype == kQ3_K_M ||
                ftype == kIQ4_NL || ftype == kQ4_K_S || ftype == kQ4_K_M || ftype == kIQ3_S || ftype == kIQ3_M ||
                ftype == kIQ4_XS) {
                why = "attn_output: 8 experts -> Q5_K";
                return GgmlType::Q5_K;
            }
        } else {
            if (ftype == kQ2_K) {
                why = "attn_output: Q2_K -> Q3_K";
                return GgmlType::Q3_K;
            }
            if (ftype == kIQ3_XXS) {
                why = "attn_output: IQ3_XXS -> IQ3_S";
                return GgmlType::IQ3_S;
            }
            if (ftype == kQ3_K_M) {
                why = "attn_output: Q3_K_M -> Q4_K";
                return GgmlType::Q4_K;
            }
            if (ftype == kQ3_K_L) {
                why = "attn_output: Q3_K_L -> Q5_K";
                return GgmlType::Q5_K;
            }
            if (ftype == kIQ3_M) {
                why = "attn_output: IQ3_M -> Q4_K";
                return GgmlType::Q4_K;
            }
        }
        why = "attn_output: base type " + base;
        return new_type;
    }
    // ATTENTION_QKV: unreachable here (category_is_attn_v takes it first, as in llama.cpp).
    if (category == Category::FfnGate || category == Category::FfnUp) {
        int& counter = category == Category::FfnGate ? qs.i_ffn_gate : qs.i_ffn_up;
        int i_layer = counter;
        const int n_layer = category == Category::FfnGate ? qs.n_ffn_gate : qs.n_ffn_up;
        if (n_expert > 1 && std::sscanf(t.name.c_str(), "blk.%d.", &i_layer) != 1)  // layer_info
            throw UserError("GGUF type mix: cannot determine the layer of tensor " + t.name);
        ++counter;
        if (ftype == kIQ3_XS && i_layer >= n_layer / 8 && i_layer < 7 * n_layer / 8) {
            why = std::string(category == Category::FfnGate ? "ffn_gate #" : "ffn_up #") + std::to_string(i_layer) + " of " +
                  std::to_string(n_layer) + ": IQ3_XS, middle layers -> IQ3_XXS";
            return GgmlType::IQ3_XXS;
        }
        return new_type;
    }
    return new_type;
}

bool requires_imatrix(const std::string& name, GgmlType type, uint32_t ftype) {  // tensor_requires_imatrix
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
    switch (type) {
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ1_M:
        case GgmlType::IQ1_S: return true;
        case GgmlType::Q2_K: return ftype == kQ2_K_S;
        default: return false;
    }
}

int layer_of(const std::string& name) {
    int layer = -1;
    std::sscanf(name.c_str(), "blk.%d.", &layer);
    return layer;
}

}  // namespace

const GgufFileType* find_gguf_file_type(const std::string& name) {
    std::string n = lower(name);
    if (n == "q3_k") n = "q3_k_m";
    if (n == "q4_k") n = "q4_k_m";
    if (n == "q5_k") n = "q5_k_m";
    for (const auto& t : gguf_file_types())
        if (t.name == n) return &t;
    return nullptr;
}

const GgufFileType* find_gguf_file_type(uint32_t id) {
    for (const auto& t : gguf_file_types())
        if (t.id == id) return &t;
    return nullptr;
}

bool gguf_weight_order(const std::string& a, const std::string& b) {
    const int la = layer_of(a), lb = layer_of(b);
    if (la != lb) return la < lb;
    return a < b;
}

GgmlType parse_gguf_tensor_type(const std::string& name, const std::string& what) {
    const auto t = ggml_type_from_name(lower(name));
    if (!t) {
        std::string list;
        for (const char* n : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k",
                              "q6_k", "iq4_nl", "iq4_xs", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m",
                              "tq1_0", "tq2_0", "mxfp4"})
            list += (list.empty() ? "" : ", ") + std::string(n);
        throw UserError(what + ": unknown tensor type '" + name + "' (expected one of " + list + ")");
    }
    return *t;
}

std::optional<GgmlType> gguf_type_of_format(const std::string& format_name) {
    if (format_name.rfind("gguf_", 0) != 0) return std::nullopt;
    return ggml_type_from_name(format_name.substr(5));
}

std::vector<GgufTensorChoice> plan_gguf_types(const GgufMixModel& m, const std::vector<GgufMixTensor>& input,
                                              const GgufMixOptions& o) {
    const GgufFileType* ft = find_gguf_file_type(o.file_type);
    if (!ft) {
        std::string list;
        for (const auto& t : gguf_file_types()) list += (list.empty() ? "" : ", ") + t.name;
        throw UserError("GGUF export: unknown --gguf-type '" + o.file_type + "' (expected one of " + list + ")");
    }
    if (m.n_layer <= 0) throw UserError("GGUF type mix: the model has no layers");
    std::vector<GgufMixTensor> tensors = input;
    std::stable_sort(tensors.begin(), tensors.end(),
                     [](const GgufMixTensor& a, const GgufMixTensor& b) { return gguf_weight_order(a.name, b.name); });
    std::vector<std::pair<std::regex, GgmlType>> patterns;
    for (const GgufTypeOverride& ov : o.overrides) {
        try {
            patterns.emplace_back(std::regex(lower(ov.pattern)), ov.type);
        } catch (const std::regex_error& e) {
            throw UserError("--tensor-type '" + ov.pattern + "': not a valid regular expression (" + e.what() + ")");
        }
    }

    State qs;  // init_quantize_state_counters
    qs.has_imatrix = o.has_imatrix;
    for (const auto& t : tensors) {
        const Category c = category_of(t.name);
        if (is_attn_v(c)) ++qs.n_attention_wv;
        if (c == Category::Output) qs.has_tied_embeddings = false;
    }
    qs.n_ffn_down = qs.n_ffn_gate = qs.n_ffn_up = static_cast<int>(m.n_layer);

    std::vector<GgufTensorChoice> plan;
    for (const auto& t : tensors) {
        GgufTensorChoice ch;
        ch.name = t.name;
        ch.ne = t.ne;
        ch.source_type = ch.type = ch.rule_type = t.source_type;
        ch.quantized = allows_quantization(o, t);
        const Category c = category_of(t.name);
        if (!ch.quantized) {
            ch.rule = "not quantized (kept " + type_text(t.source_type) + ")";
            plan.push_back(ch);
            continue;
        }
        // llama_tensor_get_type
        if (o.token_embedding_type && c == Category::TokenEmbd) {
            ch.type = ch.rule_type = *o.token_embedding_type;
            ch.rule = "--token-embedding-type";
        } else if (o.output_tensor_type && c == Category::Output) {
            ch.type = ch.rule_type = *o.output_tensor_type;
            ch.rule = "--output-tensor-type";
        } else {
            GgmlType new_type = ft->base;
            ch.rule = "base type " + type_text(new_type);
            if (ggml_type_is_quantized(ft->base)) {
                bool manual = false;
                for (size_t k = 0; k < patterns.size(); ++k)
                    if (std::regex_search(t.name, patterns[k].first)) {
                        new_type = patterns[k].second;
                        ch.rule = "--tensor-type " + o.overrides[k].pattern + "=" + lower(type_text(new_type));
                        manual = true;
                        break;
                    }
                if (!manual && !o.pure) new_type = mix_type(qs, new_type, t, m, ft->id, c, o, ch.rule);
                ch.rule_type = new_type;
                new_type = gguf_shape_fallback(t.ne[0], new_type, ch.fallback);
            } else {
                ch.rule_type = new_type;
            }
            ch.type = new_type;
        }
        ch.requires_imatrix = requires_imatrix(t.name, ch.type, ft->id);
        if (ch.requires_imatrix && !o.has_imatrix)
            throw UserError("GGUF export: " + ft->name + " needs an importance matrix for tensor " + t.name + " (" +
                            type_text(ch.type) + "); pass --imatrix F (quantlab-cli imatrix makes one)");
        plan.push_back(ch);
    }
    return plan;
}

}  // namespace ql
