// SPDX-License-Identifier: GPL-3.0-or-later
// Depth-wise error propagation and token divergence of a quantized model against its FP model:
// the engine behind `quantlab-cli divergence` and the Layer Inspector's Depth and Tokens tabs
// (docs/DIAGNOSIS.md, docs/CLI.md "divergence"). Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/divergence_report.h"
#include "engine/jobs/job.h"

namespace ql {

struct DivergenceRequest {
    std::string model;            // the FP model: HF folder or "demo" (not a quantized checkpoint)
    std::string recipe;           // either: a preset / recipe file, applied by PTQ to a copy of MODEL
    std::string quantized;        // or: a quantized checkpoint (ptq / train output, hf-modelopt folder)
    std::string data;             // evaluation data (docs/DATA.md)
    std::string calibration;      // with --recipe: calibration data ("" = `data`, training split)
    std::string split;            // "", "train", "validation", "all" ("" = the data's default)
    int64_t samples = 0;          // examples (0 = the data's default, as for eval)
    int64_t calibration_samples = 0;  // 0 = the recipe's
    uint64_t seed = 0;
    int64_t sequence_length = 0;
    int64_t batch_size = 0;       // examples per forward; 0 = about 4096 positions (at most 64 examples)
    int64_t worst_tokens = 50;
    std::string token_dtype;
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

// Validates everything before any work (UserError naming the option), opens both models, runs
// PTQ when a recipe is given ("load", "calibrate" ... progress), then the measurement
// ("divergence"). JobCancelled when `cancel` is set.
DivergenceReport run_divergence(const DivergenceRequest& request, JobSink& sink, const CancellationToken& cancel);

// Run-level metric points of a report (step 0): divergence/kl, divergence/kl_p99,
// divergence/same_top1, divergence/rms_delta_p, divergence/delta_ppl, divergence/final_rel_l2;
// and per block b the series depth/propagated_rel_l2, depth/isolated_rel_l2, depth/kl (step = b).
void report_divergence_metrics(JobSink& sink, const DivergenceReport& report);

}  // namespace ql
