// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA and QLoRA (docs/TRAINING.md "LoRA and QLoRA"): adapters trained on a frozen base of any
// QuantLab weight format, exported as PEFT folders or merged, with the merge's cost previewed
// before export. The engine behind `quantlab-cli train lora|qlora`, `export RUN --as peft|merged-*`,
// `lora preview`, `doctor ADAPTER --base`, and the GUI's LoRA method. Facade header: plain types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/api/eval_api.h"
#include "engine/api/export_api.h"
#include "engine/core/distributed_options.h"
#include "engine/core/doctor_report.h"
#include "engine/core/nd_array.h"
#include "engine/jobs/job.h"
#include "engine/lora/lora_memory.h"

namespace ql {

struct LoraTrainRequest {
    // qlora: NF4 + double quant base (or --recipe's format); lora: --recipe's quantized base, or the
    // full-precision model without one; full: full fine-tuning of every parameter (no adapter,
    // full-precision model), for comparisons.
    std::string method = "qlora";
    std::string model;               // HF folder, GGUF file, "demo", or a quantized checkpoint (its own base)
    std::string recipe;              // the base's format: a preset, file or JSON text ("" = method's default)
    std::string data;                // training data (docs/DATA.md)
    std::string eval_data;           // "" = the training spec's validation split
    std::string calibration;         // PTQ calibration for recipes that need it ("" = data)
    std::string teacher;             // loss kl: "" = MODEL in full precision
    std::string out_dir;             // DIR/adapter (PEFT), DIR/checkpoint, DIR/train_report.json
    std::string loss = "sft";        // sft (cross-entropy on the scored tokens) | kl (LoRA-QAD: KL to the FP teacher)
    // The adapter (LoraSettings).
    int64_t rank = 8;
    double alpha = 16;
    double dropout = 0.0;
    std::string targets = "all-linear";  // comma-separated patterns
    std::string init = "default";        // default | loftq
    int64_t loftq_iterations = 1;
    std::string adapter_dtype = "fp32";  // fp32 | bf16
    // Optimisation (as TrainRequest).
    int64_t steps = 100;
    int64_t batch_size = 8;
    int64_t grad_accumulation = 1;
    double lr = 2e-4;
    std::string schedule = "cosine";
    int64_t warmup_steps = 0;
    double final_lr_fraction = 0.1;
    double weight_decay = 0.0;
    double clip_norm = 1.0;
    double temperature = 1.0;
    int64_t eval_every = 0;
    int64_t eval_samples = 0;
    int64_t checkpoint_every = 0;
    int64_t calibration_samples = 0;
    int64_t sequence_length = 0;
    std::string windows = "quantlab";  // evaluation windows: quantlab | hf | llama (docs/DATA.md)
    uint64_t seed = 0;
    bool resume = false, force = false;
    DistributedOptions distributed;
    int64_t threads = 0;
    std::string device = "cpu";
};

struct LoraTrainReport {
    std::string method, model_path, adapter_dir, base_summary, base_sha256;
    int64_t steps = 0, resumed_from = 0, tokens = 0;
    int64_t trainable_parameters = 0, model_parameters = 0, adapted_layers = 0;
    double seconds = 0, init_seconds = 0, final_loss = 0;
    // LoftQ: mean over the adapted quantized layers of ||W - Q(W)|| / ||W|| and of ||W - (Q + sBA)|| / ||W||.
    std::optional<double> loftq_base_error, loftq_error;
    EvalReport teacher;  // the full-precision model
    EvalReport before;   // the base with the adapters as initialised
    EvalReport after;    // the base with the trained adapters
    TrainingMemoryEstimate memory;
};

// Validates, opens the base (PTQ where its recipe needs data), installs and initialises the
// adapters (LoftQ on request), trains them with the QAT/QAD trainer (engine/train/quant_trainer.h)
// and writes DIR. UserError for bad input; JobCancelled after saving a checkpoint.
LoraTrainReport run_lora_training(const LoraTrainRequest& request, JobSink& sink, const CancellationToken& cancel);

// --dry-run: the memory the run would need, method by method (nothing is trained or written).
TrainingMemoryEstimate lora_memory_estimate(const LoraTrainRequest& request);

std::string lora_train_report_json(const LoraTrainReport& report);

// Whether `path` is a LoRA run folder (DIR/adapter with quantlab_lora.json) or an adapter folder
// QuantLab wrote (adapter_config.json + quantlab_lora.json). Defined in engine/lora/adapted_model.cpp.
bool is_lora_run(const std::string& path);

// Export of a LoRA run (or its adapter folder):
//   peft                  the adapter as PEFT loads it (a LoftQ run adds base_model/, the HF folder
//                         of the base LoftQ chose, which PEFT's LoftQ workflow loads the adapter onto)
//   merged-fp             the merged model in full precision as an HF folder (base dequantized + update)
//   merged-<kind>         merged, re-quantized in the base's recipe, written by `export --as <kind>`
//                         (hf-modelopt, compressed-tensors, gguf, fakequant)
struct LoraExportRequest {
    std::string run;
    std::string as;
    std::string out;
    bool force = false;
    std::string gguf_type;  // merged-gguf
    std::string device = "cpu";
};
ExportReport run_lora_export(const LoraExportRequest& request, JobSink& sink, const CancellationToken& cancel);
std::vector<std::string> lora_export_kinds();

// The merge-cost preview: the adapted model (quantized base + adapter, what was trained), the
// merged model re-quantized in the base's format, and the merged model in full precision, side by
// side on the user's data; the KL of each merged form is measured against the adapted model.
struct LoraPreviewRequest {
    std::string run;
    std::string data;                  // required
    int64_t samples = 0, sequence_length = 0;
    std::string windows = "quantlab";
    std::string device = "cpu";
    // An eval suite (a .jsonl file or "default"; "" = none): each form answers its items, greedy,
    // and the verdicts that change on merge are listed. At most `suite_limit` items (0 = all);
    // `suite_max_tokens` for items without their own.
    std::string suite;
    int64_t suite_limit = 0;
    int64_t suite_max_tokens = 256;
};
// The suite on each form: items passed, and the items whose verdict differs from the adapted model's.
struct MergeSuiteResult {
    std::string suite;  // the file
    int64_t items = 0;
    int64_t passed_adapted = 0, passed_merged_requantized = 0, passed_merged_fp = 0;
    std::vector<std::string> flips_merged_requantized, flips_merged_fp;  // item ids
};
struct MergeLayerCost {
    std::string module, format;
    int64_t elements = 0;
    double codes_changed = 0;   // fraction of the layer's codes the re-quantized merge changes
    double update_norm = 0;     // ||s B A|| / ||W_eff||
    double requant_error = 0;   // ||Q(W_eff + sBA) - (W_eff + sBA)|| / ||sBA||
};
struct LoraMergePreview {
    std::string run, base_summary, data;
    EvalMetrics adapted, merged_requantized, merged_fp;  // kl / agreement: against the adapted model
    std::vector<MergeLayerCost> layers;
    double codes_changed = 0;   // over all adapted quantized layers, weighted by elements
    // The base quantizes activations (W4A4 / W8A8 recipes): the full-precision merge runs them in
    // full precision too, so its distance from the adapted model includes that.
    bool base_quantizes_inputs = false;
    std::optional<MergeSuiteResult> suite;  // with LoraPreviewRequest::suite
    double seconds = 0;
};
LoraMergePreview run_lora_preview(const LoraPreviewRequest& request, JobSink& sink, const CancellationToken& cancel);
std::string lora_preview_json(const LoraMergePreview& preview);

// The logits [batch, tokens, vocab] of the run's base with its adapter (adapter = false: the base
// alone) for token ids [batch, tokens] int64 / int32: what PEFT on transformers' model of the same
// base must give (tests/app/cli_lora_test.cpp's peer check).
NdArray lora_logits(const std::string& run, const NdArray& ids, bool adapter, const std::string& device = "cpu");

// The Export Doctor's adapter check: the adapter (a run or adapter folder) against the base it is
// about to be applied to (MODEL, quantized with `recipe` unless it is a quantized checkpoint).
// The recorded fingerprint of the base it was trained on is compared layer by layer; when they
// differ, the drift is measured: the adapter on its own base and on the given one, KL and top-1
// agreement over `data` (default 8 random-token sequences of 64).
struct AdapterDoctorRequest {
    std::string adapter, base, recipe, data;
    std::string device = "cpu";
};
DoctorReport run_adapter_doctor(const AdapterDoctorRequest& request, const CancellationToken& cancel);

}  // namespace ql
