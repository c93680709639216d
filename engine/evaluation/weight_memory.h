// SPDX-License-Identifier: GPL-3.0-or-later
// The memory a loaded model takes as deployed (serving_cost.h): its weights counted in the
// tensors a real export of it writes, and its KV cache per token of context.
//   quantized checkpoint  each quantized layer: the tensors of Model Optimizer's unified HF
//                         checkpoint (engine/export/hf_modelopt_layout.h hf_expected_tensors:
//                         packed codes, block scales, weight_scale_2 / input_scale, AWQ
//                         pre_quant_scale), else of compressed-tensors (compressed_tensors_layout.h:
//                         INT8 W8A8, pack-quantized INT), else the format's storage estimate
//                         (quantized_model.h weight_storage_bits); every other parameter BF16
//   GGUF file             the file's tensors as stored (block codes with their scales; F32/F16 as they are)
//   other folders         every parameter BF16 (2 bytes)
// KV cache: the recipe's KV format (QuantizedModel::kv_cache_memory), else 16 bits per element
// (BF16 for folders, llama.cpp's default F16 cache for GGUF files).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/evaluation/serving_cost.h"
#include "engine/loading/model_source.h"

namespace ql::evaluation {

WeightMemory measure_weight_memory(const OpenedModel& m);

// Bytes per token and for one sequence of each of `contexts` tokens.
KvCacheCost measure_kv_cache(const OpenedModel& m, const std::vector<int64_t>& contexts);

// The widest element bits of the model's quantized weights (16 when none is quantized): what
// "INT8" / "INT4" means in a checklist (NVFP4 and MXFP4 are 4, FP8 8, GGUF Q4_1 4).
double weight_element_bits(const OpenedModel& m);

// "weights nvfp4 (210 layers); inputs nvfp4 dynamic (210 layers)", "gguf_q4_1 (210), gguf_q8_0 (1)", "" for FP.
std::string describe_quant_formats(const OpenedModel& m);

}  // namespace ql::evaluation
