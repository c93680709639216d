// SPDX-License-Identifier: GPL-3.0-or-later
// A recipe's per-layer plan as llama-quantize arguments ("llama-tensor-types"): one line per
// argument pair, so that `llama-quantize $(cat plan.args) in.gguf out.gguf Q4_K_M` quantizes every
// planned layer to the plan's type whatever the mix would choose:
//   --tensor-type ^blk\.0\.attn_q\.weight$=q4_k      a Linear layer the plan quantizes
//   --tensor-type ^blk\.0\.attn_output\.weight$=f16  a Linear layer the plan keeps in high precision
//   --output-tensor-type q8_0                         lm_head (llama.cpp's OUTPUT category)
// llama-quantize (tools/quantize/quantize.cpp parse_tensor_type, src/llama-quant.cpp
// llama_tensor_get_type of the llama.cpp llama-cpp-python 0.3.36 vendors) lower-cases the pattern,
// compiles it as a std::regex and applies the first pattern that std::regex_search finds in the
// tensor name, only when the file type is a quantized one; hence the anchored, escaped names
// (blk.1 must not take blk.10's type) and one pattern per tensor. GGUF tensor names are the ones
// QuantLab's GGUF exporter writes (gguf_names.h). Only GGML types are expressible: a layer in a
// format ggml has no type for (nvfp4, fp8, QuantLab's own mxfp4 / int / nf4 rounding) is a
// UserError naming the first such layer (gguf_type_of_format: the gguf_* formats, and the
// passthrough formats f32 / f16 / bf16). Layers the plan leaves unquantized are pinned to f16,
// llama.cpp's high precision for matrices (the mix would otherwise quantize them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct LlamaTensorTypePlan {
    // GGUF tensor name -> the plan's type, for every tensor a --tensor-type line pins (model order).
    std::vector<std::pair<std::string, GgmlType>> tensors;
    std::optional<GgmlType> output_type;           // --output-tensor-type (lm_head in the plan)
    std::optional<GgmlType> token_embedding_type;  // --token-embedding-type (recipes do not quantize embeddings: unset)
    int64_t quantized_layers = 0, high_precision_layers = 0;
    std::string text;  // the arguments, one "--option value" pair per line
};

// UserError naming the layer for a format without a GGML type, an enabled input quantizer
// (llama.cpp quantizes weights only), a layer without a llama.cpp tensor, a KV-cache or rotation
// section, or an architecture llama.cpp's GGUF does not have (gguf_architecture).
LlamaTensorTypePlan llama_tensor_type_plan(const QuantizedModel& q);

// "^blk\.0\.attn_q\.weight$": the name, regex metacharacters escaped, anchored at both ends.
std::string llama_tensor_type_pattern(const std::string& gguf_name);

}  // namespace ql
