// SPDX-License-Identifier: GPL-3.0-or-later
// Writes a quantized decoder or encoder as an ONNX QDQ model ("onnx": how quantized models reach ONNX
// Runtime and TensorRT outside LLM servers; shared/design/EXPORT_LAYOUTS_2.md section 2): a
// folder with
//   model.onnx        opset 23 (IR 11), standard operators only: Gather (embedding),
//                     RMSNormalization, RotaryEmbedding (rotate_half, cos / sin tables computed as
//                     QuantLab computes them, so linear and llama3 scaling come along), Attention
//                     (causal, grouped-query), Sigmoid / Mul (SiLU), and every Linear as QDQ
//                     nodes (onnx_linear.h), the KV cache's FP8 / INT8 Q/DQ on keys after RoPE
//                     and on values where the recipe quantizes it;
//                     input  input_ids int64 [batch, sequence];
//                     output logits float32 [batch, sequence, vocab]
//   model.onnx.data   every initializer of 1 KiB or more (ONNX external data, 4096-aligned)
//   quantlab_export.json  the quantized weights' digests (export_manifest.h; layout "onnx"), so
//                     the Export Doctor can check that the file decodes to what QuantLab evaluated
//   config.json and the tokenizer files of the source folder.
// One forward over the whole sequence: no KV-cache inputs (ONNX Attention's is_causal masks
// from the top left, so a cached step needs an explicit mask; left for a later version).
// Supported: Llama-family decoders (Llama, Mistral without a sliding window shorter than the
// context, SmolLM, Qwen2 with q/k/v biases), tied or untied lm_head (the tied lm_head left in
// float reads the embedding table through Gemm(transB) instead of a second copy); BERT encoders
// (MiniLM ...; onnx_encoder_graph.cpp: input_ids, attention_mask, token_type_ids ->
// last_hidden_state).
#pragma once

#include <string>

#include "engine/export/export_folder.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/jobs/job.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// UserError naming the layer / model feature that has no ONNX form, before anything is
// written. `before_commit` sees the complete partial folder (the Export Doctor). Progress
// phases "write" (per decoder block).
FolderExportResult export_onnx(const QuantizedModel& q, const std::string& source_folder, const std::string& out, bool force,
                               JobSink& sink, const CancellationToken& cancel, const FolderCheck& before_commit = {});

constexpr const char* kOnnxModelFile = "model.onnx";
constexpr const char* kOnnxDataFile = "model.onnx.data";
constexpr int64_t kOnnxOpset = 23;

}  // namespace ql
