// SPDX-License-Identifier: GPL-3.0-or-later
// QAT and QAD runs: the engine behind `quantlab-cli train qat|qad` and the GUI's training view
// (docs/TRAINING.md). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/api/eval_api.h"
#include "engine/core/distributed_options.h"
#include "engine/jobs/job.h"

namespace ql {

struct TrainRequest {
    std::string mode = "qad";        // qat | qad
    std::string model;               // FP model (HF folder / "demo") or a quantized checkpoint (ptq output)
    std::string recipe;              // required for an FP model (PTQ-calibrated first); "" for a checkpoint
    std::string kv_cache;            // overlays on the recipe (PtqRequest::kv_cache / rotate); FP model only
    std::string rotate;
    std::string data;                // training data (docs/DATA.md), e.g. synthetic:arith:+
    std::string eval_data;           // held-out data ("" = the training spec's validation split)
    std::string eval_split = "validation";  // which part of eval_data is scored: validation | all
    std::string eval_pairs;          // sentence encoders: a pairs file for eval/spearman ("" = none)
    std::string teacher;             // "" = the model itself in full precision
    std::string calibration;         // PTQ calibration data ("" = `data`)
    std::string out_dir;             // DIR/model (quantized checkpoint), DIR/checkpoint, DIR/train_report.json
    bool force = false;              // start over in an existing DIR
    bool resume = false;             // continue from DIR/checkpoint
    int64_t steps = 300;
    int64_t batch_size = 64;
    int64_t grad_accumulation = 1;
    int64_t eval_every = 0;          // 0: before and after only
    int64_t eval_samples = 0;        // 0: the data's default (1500 synthetic problems)
    int64_t checkpoint_every = 0;
    int64_t calibration_samples = 0; // 0: the recipe's
    int64_t sequence_length = 0;
    double lr = 1e-4;
    std::string schedule = "cosine"; // constant | cosine | linear | wsd (warmup-stable-decay)
    int64_t decay_steps = 0;         // wsd: steps of the final decay (0 = 20 % of the steps)
    // Cooldown fusion (QAT.md; QAT only, recipes with the max algorithm): the first fp_steps
    // steps train in full precision, then QAT starts where the LR decay starts and the decay
    // (linear to final_lr_fraction) runs during QAT. 0 = QAT from the first step.
    int64_t fp_steps = 0;
    int64_t warmup_steps = 0;
    double final_lr_fraction = 0.1;
    double weight_decay = 0.0;
    double clip_norm = 1.0;
    double temperature = 1.0;
    double ce_weight = 0.0;          // QAD: share of the task loss
    bool distill_all_positions = true;  // QAD: every position (false: only scored ones, e.g. answers)
    std::string encoder_loss = "cosine";  // sentence encoders (QAD): cosine | mse to the teacher's embeddings
    double hidden_weight = 0.0;      // sentence encoders: weight of the hidden-state MSE
    bool clip_gradient = false;      // STE: zero gradient outside the clip range
    bool learned_scales = false;     // LSQ step sizes for symmetric integer weights
    // Partial training (--train-only): glob patterns over parameter or module names (e.g. "*mlp*",
    // "model.layers.2?.*"); only the matching parameters train, the rest stay at their PTQ values.
    // Empty: every parameter trains.
    std::vector<std::string> train_only;
    uint64_t seed = 0;
    // Flight recorder: per-layer quantizer metrics (flight/...) every N steps; 0 = off.
    int64_t record_every = 0;
    // Restore the parameters of the best held-out evaluation at the end (exact match where the
    // data has answers, else accuracy, else the lowest loss); evaluations every eval_every steps.
    bool keep_best = false;
    // Data-parallel training (docs/TRAINING.md "Several processes"; world_size 1 = one process,
    // no process group). batch_size stays the global batch, split over the ranks. Rank 0 alone
    // evaluates, writes DIR (checkpoints, model, report) and reports metrics; the other ranks only
    // train, and their TrainReport carries the steps alone.
    DistributedOptions distributed;
    int64_t threads = 0;             // intra-op threads of this process (0 = keep the current count)
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
    // fp32 | bf16: bf16 autocasts the training forward passes to bfloat16 on a CUDA device, with
    // float32 master weights (docs/TRAINING.md "Devices and precision"); evaluation stays float32.
    std::string precision = "fp32";
};

struct TrainReport {
    std::string mode, model_path, out_model;
    int64_t steps = 0, resumed_from = 0;
    double seconds = 0, final_loss = 0, codes_changed = 0;
    int64_t tokens = 0;              // tokens the training steps read (a resumed run: since its resume)
    int64_t parameters = 0;          // the parameters that trained (their number; all of them without --train-only)
    int64_t best_step = -1;          // keep_best: the step whose parameters were kept (-1: off)
    EvalReport teacher;              // the FP teacher on the eval data
    EvalReport before;               // the PTQ model before training
    EvalReport after;                // the trained quantized model
};

// Validates everything first, then: open the model (PTQ with the recipe for an FP model), the
// teacher and the data; evaluate; train; evaluate; write DIR. UserError for bad input;
// JobCancelled after saving a checkpoint (resume with `resume`).
TrainReport run_training(const TrainRequest& request, JobSink& sink, const CancellationToken& cancel);

std::string train_report_json(const TrainReport& report);

}  // namespace ql
