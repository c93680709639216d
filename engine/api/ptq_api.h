// SPDX-License-Identifier: GPL-3.0-or-later
// Post-training quantization of a model with a recipe: the engine behind `quantlab-cli ptq` and
// the GUI's PTQ run (docs/RECIPES.md). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/job_estimate.h"
#include "engine/jobs/job.h"

namespace ql {

struct PtqRequest {
    std::string model;            // HF folder, QuantLab checkpoint, or "demo"
    std::string recipe;           // preset name (NVFP4_DEFAULT ...) or recipe JSON file
    std::string recipe_json;      // or the recipe itself as JSON text (then `recipe` only names it in messages)
    std::string calibration;      // data path or built-in spec (docs/DATA.md); training split
    std::string out_dir;          // the quantized checkpoint folder to write ("" = do not save)
    bool force = false;           // replace an existing out_dir
    int64_t samples = 0;          // calibration examples (0 = the recipe's calibration.samples)
    int64_t sequence_length = 0;  // 0 = the recipe's, else the data's default
    int64_t batch_size = 0;       // 0 = the recipe's
    uint64_t seed = 0;            // synthetic calibration data
    std::string token_dtype;      // raw .bin token files
    std::string imatrix;          // importance matrix file ("" = the recipe's "imatrix", if any)
    // Overlays on the recipe (engine/quant/recipe.h overlay_recipe): a KV-cache preset (fp8,
    // fp8_cast, nvfp4, nvfp4_cast, nvfp4_rotate, int8, int8_head, int4, fp8_head, none) and a
    // rotation (hadamard, rht, none); "" keeps the recipe's own sections.
    std::string kv_cache;
    std::string rotate;
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
    // Decoders whose weights take more bytes than this are quantized layer by layer with the
    // checkpoint written block by block (shards + indexes) and each finished block's memory given
    // back; smaller ones are saved whole afterwards (one model.safetensors).
    int64_t stream_checkpoint_above_bytes = int64_t{1} << 30;
    // Only the pre-flight estimate (PtqSummary::estimate): nothing is quantized or written.
    bool dry_run = false;
    // Run even when the estimate says the peak will not fit in the free memory.
    bool ignore_memory_estimate = false;
};

// One layer's outcome (see engine/ptq/ptq_pipeline.h for the definitions).
struct PtqLayerSummary {
    std::string layer, kind, weight_quantizer, input_quantizer, method;
    int64_t parameters = 0;
    double weight_bits = 0, weight_mse = 0, output_mse = 0, output_sqnr_db = 0, rtn_output_sqnr_db = 0;
    double input_amax = 0, input_clipped_fraction = 0, awq_alpha = -1, gptq_proxy_loss = -1, seconds = 0;
};

// One attention's KV cache (see engine/ptq/ptq_pipeline.h KvCachePtqReport).
struct PtqKvCacheSummary {
    std::string attention, quantizer;
    std::vector<float> key_amax, value_amax, key_scale, value_scale;
    double key_sqnr_db = 0, value_sqnr_db = 0;  // NaN when the cache is not quantized
    int64_t tokens = 0;
};

// KV-cache memory of a decoder per token of context and for an 8k context (8192 tokens, one
// sequence), next to the weights' bytes; zero for models without a KV cache.
struct KvCacheMemorySummary {
    int64_t layers = 0, kv_heads = 0, head_dim = 0;
    double bytes_per_token = 0, fp16_bytes_per_token = 0;
    double bytes_8k() const { return bytes_per_token * 8192.0; }
    double fp16_bytes_8k() const { return fp16_bytes_per_token * 8192.0; }
};

struct PtqSummary {
    // The pre-flight estimate (engine/core/job_estimate.h), made once the model, recipe and data
    // are checked and before any work; a run that would not fit stops there with a UserError.
    JobEstimate estimate;
    std::string model_path, recipe_name, method, calibration, out_dir;
    std::string recipe_json;      // the recipe as applied (canonical JSON)
    int64_t calibration_examples = 0;
    int64_t parameters = 0, quantized_parameters = 0;
    double bits_per_parameter = 0, model_bytes = 0, fp16_bytes = 0;
    double seconds = 0;
    double peak_rss_bytes = 0;    // the process's peak resident memory when the run ended (VmHWM)
    std::vector<PtqLayerSummary> layers;
    std::string kv_cache = "off";             // the recipe's KV cache, described
    std::string rotation = "off";             // the recipe's rotation, described
    std::vector<std::string> rotation_notes;  // what the rotation step did and skipped
    std::vector<PtqKvCacheSummary> kv_cache_layers;
    KvCacheMemorySummary kv_memory;
};

// Validates everything first (model, recipe against the model, data), estimates the peak memory
// and time (PtqSummary::estimate; a UserError naming what is needed, what is free and which
// setting lowers it when the peak will not fit, unless ignore_memory_estimate; dry_run stops
// here), then runs the pipeline and writes out_dir (with ptq_report.json and ptq_report.csv)
// atomically. Progress phases: "load", then "ptq" (layer by layer) or "calibrate", "smoothquant"
// / "awq" / "gptq", "measure" (whole model), then "save". UserError for bad input; JobCancelled
// leaves no partial output.
PtqSummary run_ptq(const PtqRequest& request, JobSink& sink, const CancellationToken& cancel);

// The report files' contents.
std::string ptq_report_json(const PtqSummary& s);
std::string ptq_report_csv(const PtqSummary& s);

// Names of the shipped recipe presets.
std::vector<std::string> recipe_preset_names();

// What a project records before a run starts: the recipe (preset name or file) as canonical JSON
// with its name, and the folder a MODEL argument names ("demo" resolved). UserError like run_ptq.
std::pair<std::string, std::string> recipe_name_and_json(const std::string& recipe, const std::string& kv_cache = "",
                                                         const std::string& rotate = "");
std::string resolved_model_folder(const std::string& model);

}  // namespace ql
