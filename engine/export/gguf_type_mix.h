// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's per-tensor type choice for a file type (Q4_K_M, Q5_K_M, Q3_K_M, Q2_K, Q6_K, ...):
// a port of llama-quantize's rules (src/llama-quant.cpp of the llama.cpp that llama-cpp-python
// 0.3.36 vendors: tensor_allows_quantization, llama_tensor_get_type, llama_tensor_get_type_impl,
// tensor_type_fallback, tensor_requires_imatrix; shared/design/GGUF_KQUANTS.md section 5), so that
// `quantlab-cli export --as gguf --gguf-type q4_k_m` writes the types `llama-quantize ... Q4_K_M`
// writes. Checked against llama.cpp itself (scripts/check-gguf-mixes runs llama_model_quantize
// from libllama on the same files and compares every tensor's type).
//
// The order matters: the attn_v / ffn_down counters advance in llama.cpp's tensor order
// (llama_model_loader::weight_name_comparer: by the layer number of "blk.N." (other tensors
// first), then by name), and --tensor-type matches skip the mix rules (and the counters) for
// the tensors they match. The planner sorts its input that way and returns the plan in that order,
// which is also the order llama-quantize writes the tensors in.
//
// Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/io/gguf_shape_fallback.h"

namespace ql {

// A llama.cpp file type (llama.h enum llama_ftype) QuantLab can write: every tensor type its
// rules can choose is one QuantLab writes.
struct GgufFileType {
    std::string name;        // lower case as accepted by --gguf-type: "q4_k_m", "f16", ...
    uint32_t id = 0;         // general.file_type: LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, ...
    GgmlType base;           // llama_ftype_get_default_type
    std::string llama_name;  // "MOSTLY_Q4_K_M", "ALL_F32" (gguf-py LlamaFileType names)
    bool is_mix = false;     // a K-quant / i-quant / ternary mix (rules beyond one type for every matrix)
};

// f32 f16 q4_0 q4_1 q8_0 q5_0 q5_1 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k
// iq2_xxs iq2_xs q2_k_s iq3_xs iq3_xxs iq1_s iq4_nl iq3_s iq3_m iq2_s iq2_m iq4_xs iq1_m bf16 tq1_0
// tq2_0 mxfp4_moe, in llama_ftype order.
const std::vector<GgufFileType>& gguf_file_types();
// By name (case-insensitive; llama-quantize's aliases q3_k, q4_k, q5_k = the _M mixes), or null.
const GgufFileType* find_gguf_file_type(const std::string& name);
const GgufFileType* find_gguf_file_type(uint32_t id);

// What the rules need to know about the model (llama_hparams / llama_model as llama.cpp loads it).
struct GgufMixModel {
    std::string architecture;  // general.architecture: "llama", "qwen2", "gpt2"
    int64_t n_layer = 0;       // block_count (n_layer_all)
    int64_t n_head = 0, n_head_kv = 0;
    int64_t n_expert = 0;      // 0 for the dense models QuantLab builds
};

// One tensor of the source file (an F32 / F16 GGUF as convert_hf_to_gguf.py would write it).
struct GgufMixTensor {
    std::string name;          // "blk.0.attn_v.weight"
    std::vector<int64_t> ne;   // ggml order
    GgmlType source_type = GgmlType::F32;
};

struct GgufTypeOverride {      // --tensor-type REGEX=TYPE (llama-quantize's tensor_type_option)
    std::string pattern;       // ECMAScript regex, searched in the name (std::regex_search); lower-cased
    GgmlType type;
};

struct GgufMixOptions {
    std::string file_type = "q4_k_m";
    std::vector<GgufTypeOverride> overrides;    // first match wins
    std::optional<GgmlType> output_tensor_type;     // --output-tensor-type
    std::optional<GgmlType> token_embedding_type;   // --token-embedding-type
    bool has_imatrix = false;   // changes Q4_0 / Q5_0 / IQ4 ffn_down choices, and Q2_K_S needs one
    bool pure = false;          // --pure: the base type for every quantized tensor
    bool quantize_output = true;  // false = --leave-output-tensor
};

struct GgufTensorChoice {
    std::string name;
    std::vector<int64_t> ne;
    GgmlType source_type = GgmlType::F32;
    GgmlType type = GgmlType::F32;       // what is written
    GgmlType rule_type = GgmlType::F32;  // what the rules (or an override) chose, before the shape fallback
    bool quantized = false;              // tensor_allows_quantization
    bool requires_imatrix = false;       // tensor_requires_imatrix
    std::string rule;       // why rule_type: "attn_v: use_more_bits(0, 4)", "--tensor-type attn_v=q8_0", "base type"
    std::string fallback;   // "" or why `type` differs from rule_type ("ne[0] 192 is not a multiple of 256 (Q4_K) -> Q5_0")
};

// The plan for every tensor, in llama.cpp's order. UserError for an unknown file type, a model
// without layers, an override type QuantLab cannot write, or a tensor that needs an imatrix
// without one (tensor_requires_imatrix: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS except
// token_embd / output; Q2_K in Q2_K_S).
std::vector<GgufTensorChoice> plan_gguf_types(const GgufMixModel& model, const std::vector<GgufMixTensor>& tensors,
                                              const GgufMixOptions& options);

// llama_model_loader::weight_name_comparer.
bool gguf_weight_order(const std::string& a, const std::string& b);

// "q4_k" -> Q4_K etc. for --tensor-type; UserError naming `what` for names ggml does not have or
// QuantLab cannot write.
GgmlType parse_gguf_tensor_type(const std::string& name, const std::string& what);

// The GGML type a QuantLab format stores exactly ("gguf_q4_k" -> Q4_K, "gguf_mxfp4" -> MXFP4);
// nullopt for every other format (QuantLab's "mxfp4" and "int8" round differently from ggml's).
std::optional<GgmlType> gguf_type_of_format(const std::string& format_name);

}  // namespace ql
