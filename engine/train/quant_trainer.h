// SPDX-License-Identifier: GPL-3.0-or-later
// QAT and QAD (shared/design/QAT.md, docs/TRAINING.md): training a model whose quantizers are
// installed (QuantizedModel, calibrated by PTQ) with straight-through fake quantization in the
// forward pass.
//   QAT: loss = cross-entropy of the quantized model on the data's scored tokens.
//   QAD: loss = (1 - ce_weight) * T^2 * KL(teacher || student) + ce_weight * CE, the teacher a
//        frozen full-precision model computed on the same batch (no gradient, never updated).
//        Sentence encoders: loss = embedding loss (1 - cosine or MSE to the teacher's sentence
//        embeddings) + hidden_weight * hidden-state MSE; metrics train/loss, train/cosine (mean
//        cosine to the teacher), train/hidden_mse (with hidden_weight > 0). QAT of an encoder
//        trains the in-batch contrastive loss of each sentence against a deletion view of itself
//        (contrastive_loss.h); metrics train/loss, train/top1 (the in-batch accuracy).
// AdamW, global gradient-norm clipping, gradient accumulation, any LrSchedule. A Job: metrics
// every step (train/loss, train/ce, train/kl, train/lr, train/grad_norm, train/tokens_per_s),
// every eval_every steps eval/* on held-out data against the teacher and train/codes_changed
// (fraction of quantized weight values that differ from those at step 0); checkpoints every
// checkpoint_every steps and when stopped (cancel = pause: resume continues bit-exactly).
#pragma once

#include <functional>
#include <utility>
#include <vector>
#include <optional>
#include <string>

#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/quant/quantized_model.h"
#include "engine/train/adamw.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/training_batches.h"

namespace ql {

class DataParallel;

struct QuantTrainingConfig {
    std::string mode = "qad";       // qat | qad
    int64_t steps = 300;
    int64_t grad_accumulation = 1;  // micro-batches (of the data's batch size) per optimizer step
    LrSchedule schedule;            // total_steps is set to `steps`; unused when lr_at is set
    std::function<double(int64_t step)> lr_at;  // any schedule (WSD, the QAT planner's fused run)
    // Cooldown fusion (QAT.md): the first fp_steps steps train the full-precision model on the
    // task loss (quantizers off); at step fp_steps the quantizers come on -- after
    // before_quantized_steps() recalibrates their static scales on the trained weights -- and QAT
    // runs the remaining steps, during which a fused schedule decays. QAT only.
    int64_t fp_steps = 0;
    std::function<void()> before_quantized_steps;
    AdamWOptions optimizer;
    double clip_norm = 1.0;         // <= 0: no clipping
    double temperature = 1.0;       // QAD
    double ce_weight = 0.0;         // QAD: weight of the task loss in the mix
    // QAD: match the teacher at every position of the sequence (as the QAD report distils whole
    // sequences), not only at the scored ones (answers of synthetic tasks).
    bool distill_all_positions = true;
    // QAD of a sentence encoder (embedding_distillation.h): the embedding loss "cosine" (1 - cos)
    // or "mse", plus hidden_weight times the hidden-state MSE of every encoder layer.
    std::string encoder_loss = "cosine";
    double hidden_weight = 0.0;
    // QAT of a sentence encoder: the deletion views of micro-batch k use seed mix(view_seed, k),
    // so a resumed run sees the views the uninterrupted one would have.
    uint64_t view_seed = 0;
    bool clip_gradient = false;     // STE: zero gradient outside the clip range
    bool learned_scales = false;    // LSQ step sizes for symmetric integer weights (trained, no decay)
    // --precision bf16 (a CUDA model): each micro-batch's forward and loss under CUDA autocast to
    // bfloat16 (bf16_autocast.h); parameters, gradients and optimizer state stay float32.
    bool bf16_autocast = false;
    int64_t eval_every = 0;         // 0: only at the end
    int64_t checkpoint_every = 0;   // 0: only when stopped and at the end
    std::string checkpoint_dir;     // "" = no checkpoints (and no resume)
    std::string config_json;        // identifies the run in checkpoints (resume refuses others)
    // Flight recorder (flight_recorder.h): per-layer quantizer metrics every record_every steps
    // (0: off), at the first step of the run and at the end.
    int64_t record_every = 0;
    // Keep the best: after each evaluation held_out_score() rates the student (higher is better,
    // nullopt = no score); at the end the parameters of the best-rated evaluation are restored
    // (kept in memory: a resumed run rates from its resume point on).
    bool keep_best = false;
    std::function<std::optional<double>()> held_out_score;
    // Data-parallel training (engine/distributed/data_parallel.h; not owned; null = one process):
    // rank 0's parameters (and, resuming, its checkpoint's step and optimizer state) are
    // broadcast first; each rank trains on its shard of every global batch, the losses weighted
    // by the shard's share of the scored positions, and the gradients are averaged before the
    // step. Only rank 0 should have a checkpoint_dir, an evaluator and a flight recorder. Extra
    // metrics: train/allreduce_s (seconds in the gradient collectives per step) and
    // train/rank<r>/tokens_per_s; train/tokens_per_s counts every rank's tokens.
    DataParallel* data_parallel = nullptr;
    // Adapter training (LoRA / QLoRA, engine/lora): when non-empty, only these tensors train (and
    // are checkpointed, broadcast and averaged); the model's own parameters stay frozen (no
    // requires_grad), so a quantized base keeps its cached quantized weights.
    std::vector<std::pair<std::string, at::Tensor>> trainable;
    // Called with the micro-batch's index (step * grad_accumulation + micro) before its training
    // forward (LoRA's dropout masks are a function of it), and after every optimizer step (bf16
    // adapter storage rounds there). Either may be empty.
    std::function<void(int64_t micro_batch)> before_micro_batch;
    std::function<void()> after_optimizer_step;
};

struct QuantTrainingResult {
    int64_t steps = 0;              // steps completed (including resumed ones)
    int64_t resumed_from = 0;       // 0 = fresh start
    double final_loss = 0;
    double seconds = 0;
    double codes_changed = 0;
    int64_t tokens = 0;             // tokens the steps of this call read, all ranks (encoder QAT: both views)
    int64_t best_step = -1;         // keep_best: the evaluation restored at the end (-1: none rated)
    std::optional<double> best_score;
};

// Evaluates the student (and compares with the teacher) on held-out data and reports eval/<name>
// metrics at `step` (= steps completed); the trainer calls it every eval_every steps and at the
// end. Supplied by the caller (the train facade, engine/api/train_api.cpp).
using TrainingEvaluator = std::function<void(int64_t step, JobSink& sink, const CancellationToken& cancel)>;

// `teacher` is required for QAD and may be null for QAT. The student's parameters get
// requires_grad for the run and lose it after.
QuantTrainingResult train_quantized(QuantizedModel& student, Model* teacher, const TrainingBatches& data,
                                    const QuantTrainingConfig& config, const TrainingEvaluator& evaluate, JobSink& sink,
                                    const CancellationToken& cancel);

}  // namespace ql
