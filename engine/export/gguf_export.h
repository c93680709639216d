// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF export for llama.cpp (EXPORT.md section 2): the engine behind `quantlab-cli export --as
// gguf`. Facade header: plain types only.
//
// MODEL is an HF folder of a Llama-family (llama, mistral, ...), Qwen2 or GPT-2 model with float
// weights, "demo", or a QuantLab quantized checkpoint (`quantlab-cli ptq` output). What is written:
// - every 1-D tensor (norms, biases, Llama 3's rope_freqs) as F32, as convert_hf_to_gguf.py does;
// - HF folder: every 2-D weight, token_embd and output included, in the requested type (like
//   `llama-quantize --pure`: one type for all matrices); a matrix whose row length is not a
//   multiple of the type's block (32; 256 for the K-quants and IQ4_XS) falls back to F16 (F32
//   when f32 was asked), with a warning;
// - quantized checkpoint: each layer the recipe quantized is written from its quantized weight
//   (the values QuantLab's quantized forward uses) encoded in the requested type; layers left in
//   high precision by the recipe (and the embeddings, which recipes never quantize) are written
//   F32 (or F16 / F32 when that is the requested type), so that the file holds QuantLab's
//   quantized model. When the recipe's weight format is the requested GGUF format (gguf_q8_0 ->
//   q8_0, gguf_q4_0 -> q4_0, gguf_mxfp4 -> mxfp4) the values are identical: re-encoding a block
//   already on its grid gives the same block. Other formats (int4, nvfp4, ...) are re-quantized
//   (a second rounding; a warning says so). Activation quantizers have no GGUF form (llama.cpp
//   quantizes activations itself: a warning); an unfolded AWQ / SmoothQuant pre_quant_scale is a
//   UserError (the file could not reproduce the model).
// Llama q/k rows are permuted as convert_hf_to_gguf.py does; GPT-2 Conv1D weights are written as
// [out, in] (ne = {in, out}), as the converter's transpose gives them. A tied lm_head is not
// written (llama.cpp reuses token_embd), unless a checkpoint quantized it.
// Writing is crash-safe: "<out>.partial", fsync, rename; an existing file is replaced only with
// `force`; a full disk or an unwritable folder is a UserError naming the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/jobs/job.h"

namespace ql {

struct GgufExportOptions {
    std::string type = "q4_0";  // f32 f16 q8_0 q4_0 q4_1 q5_0 mxfp4 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs
    bool force = false;         // replace an existing file
};

struct GgufExportTensor {
    std::string name;              // GGUF name ("blk.0.attn_q.weight")
    std::string source;            // HF parameter (or layer) it came from
    std::string type;              // "Q4_0", "F32", ...
    std::vector<int64_t> ne;       // ggml order
    bool from_quantized = false;   // a checkpoint layer's quantized weight
};

struct GgufExportResult {
    std::string path;               // the file written
    std::string architecture;       // "llama", "qwen2", "gpt2"
    std::string type;               // the requested type, lower case
    bool from_checkpoint = false;
    std::string tokenizer_source;   // "tokenizer.json", "quantlab.json", "placeholder"
    std::vector<GgufExportTensor> tensors;
    std::vector<std::string> warnings;  // also sent to the sink as warnings
    uint64_t bytes = 0;             // file size
    double seconds = 0;
};

// Progress: phase "export", one unit per tensor; cancellation checked before each tensor (the
// partial file is removed). UserError for an unknown type, an unsupported architecture, an
// existing file without force, write failures (naming the path).
GgufExportResult export_gguf(const std::string& model, const std::string& out_file, const GgufExportOptions& options,
                             JobSink& sink, const CancellationToken& cancel);

// The types export_gguf accepts, lower case.
std::vector<std::string> gguf_export_types();

}  // namespace ql
