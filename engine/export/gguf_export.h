// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF export for llama.cpp (EXPORT.md section 2, docs/EXPORT.md "GGUF"): the engine behind
// `quantlab-cli export --as gguf`. Facade header: plain types only.
//
// MODEL is an HF folder of a Llama-family (llama, mistral, ...), Qwen2 or GPT-2 model, "demo",
// a GGUF file, or a QuantLab quantized checkpoint (`quantlab-cli ptq` output).
// The file type (--gguf-type) is one of llama.cpp's (gguf_type_mix.h gguf_file_types(): f32 f16
// bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q2_k_s q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k
// iq4_nl iq4_xs mxfp4_moe), and each tensor gets the type llama-quantize would give it
// (gguf_type_mix.h: the mix rules, --tensor-type overrides, --pure, the shape fallbacks), so the
// file equals what `convert_hf_to_gguf.py --outtype f16` followed by `llama-quantize` writes:
// - float sources (HF folders, the FP tensors of checkpoints) go through the source precision
//   first (--gguf-source, default f16 for quantized file types, as llama-quantize reads an F16
//   GGUF; the file type itself for f32 / f16 / bf16); 1-D tensors, norms and GPT-2's
//   position_embd stay F32 (convert_hf_to_gguf's rule); "mxfp4" is QuantLab's name for MXFP4 in
//   every matrix (mxfp4_moe with --pure: llama.cpp has no dense MXFP4 mix);
// - --imatrix F (either llama.cpp format): each quantized tensor with an entry is quantized with
//   that importance vector (llama-quantize's quant_weights) and the mix sees has_imatrix;
// - a QuantLab checkpoint: every layer its recipe quantized in a GGUF format is written in that
//   format from its quantized values, whatever the mix says (the recipe is the plan); layers in
//   other formats are re-quantized from their quantized weights to the mix's type (a warning);
//   every other tensor follows the mix. Activation quantizers have no GGUF form (a warning); an
//   unfolded AWQ / SmoothQuant pre_quant_scale is a UserError;
// - a GGUF file: re-quantized from its decoded values; a tensor whose type does not change is
//   copied byte for byte (llama-quantize does the same).
// Every tensor that does not get the type its rules (or its recipe) asked for is listed with the
// reason in `fallbacks` (and as warnings); with `strict` any such tensor is a UserError.
// Llama q/k rows are permuted as convert_hf_to_gguf.py does; GPT-2 Conv1D weights are written as
// [out, in] (ne = {in, out}). A tied lm_head is not written (llama.cpp reuses token_embd) unless a
// checkpoint quantized it. Tensors are written in llama.cpp's order (gguf_weight_order).
// Beside the file goes its plan, "<out>.plan.json" = {"file_type": "q4_k_m", "tensors":
// {"<gguf name>": "<type as written>"}} (gguf_plan_path()), which the Export Doctor checks the
// file's types against. Writing is crash-safe: "<out>.partial", fsync, rename; an existing file is replaced only with
// `force`; a full disk or an unwritable folder is a UserError naming the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/jobs/job.h"

namespace ql {

struct GgufExportOptions {
    std::string type = "q4_0";             // a file type of gguf_file_types(), or "mxfp4"
    bool force = false;                    // replace an existing file
    std::vector<std::string> tensor_types; // --tensor-type REGEX=TYPE, first match wins
    std::string output_tensor_type;        // --output-tensor-type TYPE ("" = the mix's)
    std::string token_embedding_type;      // --token-embedding-type TYPE ("" = the mix's)
    std::string imatrix;                   // importance matrix file ("" = none)
    std::string source_precision;          // f16 | bf16 | f32 ("" = f16 for quantized file types)
    bool pure = false;                     // --pure: the base type for every quantized tensor
    bool strict = false;                   // a fallback is an error
    bool dry_run = false;                  // plan only: nothing is written
};

struct GgufExportTensor {
    std::string name;              // GGUF name ("blk.0.attn_q.weight")
    std::string source;            // HF parameter (or layer) it came from
    std::string type;              // what is written: "Q4_K", "F32", ...
    std::string requested;         // what its rule or recipe asked for (== type unless a fallback)
    std::string rule;              // why: "attn_v #0 of 4: use_more_bits(0, 4) -> Q6_K", "recipe gguf_q4_k", ...
    std::string fallback;          // "" or why `type` differs from `requested`
    std::vector<int64_t> ne;       // ggml order
    uint64_t bytes = 0;
    bool from_quantized = false;   // a checkpoint layer's quantized weight
    bool importance = false;       // quantized with an imatrix entry
    bool copied = false;           // bytes copied from a GGUF source unchanged
};

struct GgufExportResult {
    std::string path;               // the file written ("" for a dry run)
    std::string plan_path;          // its plan beside it (gguf_plan_path(path); "" for a dry run)
    std::string architecture;       // "llama", "qwen2", "gpt2"
    std::string type;               // the file type, lower case ("q4_k_m")
    uint32_t file_type = 0;         // general.file_type (llama_ftype)
    std::string source_precision;   // "f16", "bf16", "f32"
    std::string imatrix;            // the importance matrix used, or ""
    bool from_checkpoint = false;
    bool from_gguf = false;
    bool dry_run = false;
    std::string tokenizer_source;   // "tokenizer.json", "quantlab.json", "placeholder", "gguf"
    std::vector<GgufExportTensor> tensors;  // llama.cpp's order
    std::vector<std::string> fallbacks;     // "<tensor>: <reason>" for each tensor listed above
    std::vector<std::string> warnings;      // also sent to the sink as warnings
    uint64_t bytes = 0;             // file size (planned tensor bytes for a dry run)
    uint64_t parameters = 0;        // elements of every tensor
    double bits_per_weight = 0;     // tensor bytes * 8 / elements
    double seconds = 0;
};

// Progress: phase "export", one unit per tensor; cancellation checked before each tensor (the
// partial file is removed). UserError for an unknown type, an unsupported architecture, an
// existing file without force, a malformed --tensor-type, an imatrix entry of the wrong size,
// fallbacks under `strict`, write failures (naming the path).
GgufExportResult export_gguf(const std::string& model, const std::string& out_file, const GgufExportOptions& options,
                             JobSink& sink, const CancellationToken& cancel);

// The file types export_gguf accepts, lower case.
std::vector<std::string> gguf_export_types();

// Where the plan of GGUF file `gguf_path` lies: "<gguf_path>.plan.json".
inline std::string gguf_plan_path(const std::string& gguf_path) { return gguf_path + ".plan.json"; }

}  // namespace ql
