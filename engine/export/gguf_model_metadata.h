// SPDX-License-Identifier: GPL-3.0-or-later
// general.* and <arch>.* metadata of a GGUF export, as convert_hf_to_gguf.py writes them
// (ggml-org/llama.cpp conversion/base.py TextModel.set_gguf_parameters, conversion/llama.py,
// conversion/gpt2.py; key names gguf-py/gguf/constants.py Keys).
#pragma once

#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/models/model_config.h"

namespace ql {

// llama.cpp's general.file_type (LlamaFileType) for a GGUF type: F32 0, F16 1, Q4_0 2, Q4_1 3,
// Q8_0 7, Q5_0 8, MXFP4 38 (MOSTLY_MXFP4_MOE, the only MXFP4 file type llama.cpp names); a file of
// one K type gets its mix's number: Q2_K 10, Q3_K 12 (Q3_K_M), Q4_K 15 (Q4_K_M), Q5_K 17
// (Q5_K_M), Q6_K 18, IQ4_NL 25, IQ4_XS 30; the i-quants and ternary types the file type whose base
// type they are: IQ2_XXS 19, IQ2_XS 20, IQ3_XXS 23, IQ1_S 24, IQ3_S 26, IQ2_S 29 (MOSTLY_IQ2_M),
// IQ1_M 31, TQ1_0 36, TQ2_0 37.
uint32_t gguf_file_type(GgmlType type);

struct GgufModelMetadata {
    GgufMetadata metadata;
    std::vector<std::string> warnings;  // what llama.cpp will not reproduce (e.g. Mistral's window)
};

// Llama / Qwen2: <arch>.{vocab_size, context_length, embedding_length, block_count,
// feed_forward_length, attention.head_count, attention.head_count_kv, attention.key_length,
// attention.value_length, rope.dimension_count, rope.freq_base,
// attention.layer_norm_rms_epsilon} and rope.scaling.{type,factor} for linear scaling (Llama 3
// scaling is the rope_freqs tensor instead: gguf_llama3_rope_factors). GPT-2: gpt2.{vocab_size,
// context_length, embedding_length, block_count, feed_forward_length, attention.head_count,
// attention.layer_norm_epsilon}. BERT: bert.{context_length, embedding_length, block_count,
// feed_forward_length, attention.head_count, attention.layer_norm_epsilon, attention.causal
// (false), pooling_type (from modules.json: mean 1, cls 2, lasttoken 3)} and
// tokenizer.ggml.token_type_count (conversion/bert.py). Plus general.architecture, general.name, general.file_type,
// general.quantization_version (2). UserError for architectures llama.cpp cannot run as exported.
GgufModelMetadata gguf_model_metadata(const ModelConfig& config, const std::string& name, GgmlType file_type);

// Llama 3 RoPE scaling as llama.cpp takes it: one factor per frequency (head_dim / 2 values, F32
// tensor "rope_freqs.weight"), computed as conversion/llama.py generate_extra_tensors does
// (1 for short wavelengths, `factor` for long ones, a smooth blend between).
std::vector<float> gguf_llama3_rope_factors(const ModelConfig& config);

}  // namespace ql
