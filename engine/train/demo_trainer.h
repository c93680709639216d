// SPDX-License-Identifier: GPL-3.0-or-later
// Training the demo decoder on the synthetic arithmetic tasks (docs/DATA.md "The demo model"):
// next-token cross-entropy on answer tokens, AdamW, warm-up + cosine schedule, gradient
// clipping, fresh training problems every step (no epochs), seeded and deterministic for a given
// thread count.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/data/synthetic_tasks.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"
#include "engine/train/adamw.h"
#include "engine/train/lr_schedule.h"

namespace ql {

struct DemoTrainingConfig {
    ModelConfig model;                   // demo_training_config(): the demo decoder, tuned
    std::vector<SyntheticDomain> domains;       // training mix (repeats weight a domain)
    std::vector<SyntheticDomain> eval_domains;  // held-out checks: each operation equally
    int64_t steps = 0;
    int64_t batch_size = 0;
    LrSchedule schedule;                 // total_steps = steps
    AdamWOptions optimizer;
    double clip_norm = 1.0;
    double query_key_init_gain = 1.0;    // q_proj/k_proj weights scaled after the HF-style init
    uint64_t seed = 0;
    // Where the steps run (demo --retrain --device); the trained model comes back on the CPU.
    std::string device = "cpu";
    int64_t eval_every = 0;              // steps between validation checks (0 = none)
    int64_t eval_samples = 0;            // problems per validation check
};

DemoTrainingConfig demo_training_config();

struct DemoTrainingResult {
    std::unique_ptr<Model> model;
    int64_t steps = 0;
    double seconds = 0;
    double final_loss = 0;
};

// Reports progress(step, steps, "train") and metrics every step; checks `cancel` every step.
// A non-finite loss is reported as a metric, then training stops with a runtime_error.
DemoTrainingResult train_demo_model(const DemoTrainingConfig& config, JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
