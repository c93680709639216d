// SPDX-License-Identifier: GPL-3.0-or-later
// Exporting a quantized model: the engine behind `quantlab-cli export` (docs/EXPORT.md).
// Facade header: plain types only.
//   hf-modelopt  NVIDIA Model Optimizer's unified HF checkpoint (packed NVFP4 / FP8 / INT4 AWQ /
//                MXFP4 weights with scales; vLLM and TensorRT-LLM load it; so does QuantLab)
//   compressed-tensors  vLLM / llm-compressor's layout (pack-quantized INT, float-quantized FP8,
//                nvfp4- and mxfp4-pack-quantized; KV-cache scales)
//   gguf         llama.cpp's GGUF file
//   onnx         an ONNX QDQ model (model.onnx + model.onnx.data; ONNX Runtime, TensorRT) of a
//                Llama-family decoder: INT8 / FP8 Q/DQ pairs, INT4 blocked weight-only DQ
//   fakequant    the model's own HF layout with dequantized weights + quantlab_recipe.json
//   report       a folder with report.html (self-contained: plots as PNG data: URIs),
//                metrics.csv and recipe.json
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/doctor_report.h"
#include "engine/core/export_series.h"
#include "engine/export/gguf_export.h"
#include "engine/jobs/job.h"

namespace ql {

struct ExportRequest {
    std::string model;      // a QuantLab quantized checkpoint folder (ptq / train output), or "demo"
    std::string as;         // one of export_kinds()
    std::string out;        // the folder (hf-modelopt, fakequant, report) or file (gguf) to write
    bool force = false;     // replace an existing `out`
    std::string gguf_type;  // for gguf: a llama.cpp file type ("q4_k_m", ...; "" = q4_0)
    GgufExportOptions gguf; // the other GGUF options (type and force are taken from above)
    std::string project;    // the project the series come from (for the report's manifest), or ""
    int64_t run_id = 0;
    std::vector<ExportSeries> series;  // report curves; empty: from the checkpoint's own reports
    std::string run_config_json;       // the project run's config (seed, data) for the manifest, or ""
    // Report: evaluation runs of the checkpoint, baseline first (JSON texts; the report's
    // "Evaluation" section; projects/evalsuite_records.h evaluations_of_model).
    std::vector<std::string> evaluations;
    // Where the model is loaded and its quantized weights computed (cpu | cuda | cuda:N); the
    // files are written from CPU copies.
    std::string device = "cpu";
};

struct ExportReport {
    std::string as, out;
    int64_t bytes = 0;       // written, all files
    double seconds = 0;
    std::vector<std::string> files;     // final paths
    std::vector<std::string> warnings;  // what the export could not represent
    std::optional<GgufExportResult> gguf;  // gguf: the per-tensor plan (types, rules, fallbacks)
    // The Export Doctor's report on what was written (hf-modelopt, compressed-tensors, fakequant:
    // checked before the rename, an error aborts the export; gguf: checked after writing).
    // layout "" for reports, which are not model artifacts.
    DoctorReport doctor;
};

// Checks the request (kind, out, existing output without force) before opening the model;
// writes crash-safely (a ".partial" name renamed into place; nothing under `out` on failure).
// The Export Doctor checks every model artifact before it is renamed into place: a finding of
// severity error is a UserError listing the errors (nothing is left under `out`).
// Progress phases "load", then the exporter's ("pack", "write"). Reports artifact(kind = as,
// path = out). UserError for bad input, JobCancelled on cancellation.
ExportReport run_export(const ExportRequest& request, JobSink& sink, const CancellationToken& cancel);

std::vector<std::string> export_kinds();  // hf-modelopt, compressed-tensors, gguf, onnx, fakequant, report

// A per-layer plan (a recipe: a preset, a recipe file, or recipe JSON text starting with '{'; e.g.
// an experiment's mixed-precision plan) in another tool's form, for `model` (HF folder or "demo",
// whose layers the plan's patterns resolve to; nothing is calibrated or packed):
//   compressed-tensors  the quantization_config (config_groups with module-name targets, ignore)
//                       that `export --as compressed-tensors` of the model quantized with the plan
//                       writes into config.json (the same writer)
//   modelopt            Model Optimizer's quantization config {"quant_cfg", "algorithm"} for
//                       mtq.quantize, one entry per layer's quantizer (engine/export/modelopt_plan.h;
//                       JSON: load it with scripts/modelopt_plan.py)
//   llama-tensor-types  llama-quantize arguments, one per line: --tensor-type ^name$=type for every
//                       planned layer, --output-tensor-type for lm_head
//                       (engine/export/llama_tensor_types.h)
// UserError naming the layer and format for what the form cannot express.
struct PlanExport {
    std::string text;         // the exported form (JSON text; llama-tensor-types: argument lines)
    // Layers quantized / left in high precision (compressed-tensors' ignore, modelopt's disabled,
    // llama's f16 / f32 / bf16 pins); groups: compressed-tensors' config groups (0 for the others).
    int64_t quantized_layers = 0, ignored_layers = 0, groups = 0;
};
PlanExport export_plan(const std::string& model, const std::string& recipe, const std::string& as);
// What export_plan's kinds are: compressed-tensors, modelopt, llama-tensor-types.
std::vector<std::string> plan_export_kinds();

}  // namespace ql
