// SPDX-License-Identifier: GPL-3.0-or-later
// Layer sensitivity and automatic mixed precision: the engine behind `quantlab-cli sensitivity`
// and the GUI's sensitivity view (docs/RECIPES.md "Sensitivity"). Facade header: plain types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/jobs/job.h"

namespace ql {

struct SensitivityRequest {
    std::string model;                 // HF folder or "demo"
    std::vector<std::string> recipes;  // one or more presets / recipe files (the candidates)
    std::string calibration;           // calibration data (training split)
    std::string data;                  // held-out data for the measurement ("" = the calibration spec's validation split)
    int64_t samples = 0;               // calibration examples (0 = the recipe's)
    int64_t eval_samples = 128;        // measurement examples
    uint64_t seed = 0;
    double bits_budget = 0;            // > 0: search a mixed-precision recipe within this many bits per weight
    // > 0 (instead of bits_budget): the budget in bits per parameter of the whole model, the
    // parameters outside the candidate layers (embeddings, norms, lm_head) counted at 16 bits as
    // ModelSize does; the search gets the per-weight budget of the candidate layers it leaves.
    double bits_per_parameter_budget = 0;
    // Measure on the training split of `calibration` (data ignored), so that a run scored on the
    // validation split afterwards (an experiment's mixed run) is not scored on what chose its plan.
    bool measure_on_training_split = false;
    std::string device = "cpu";  // where models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
};

struct SensitivityRow {
    std::string layer;
    int64_t parameters = 0;
    std::vector<double> kl, loss_delta, weight_bits;  // one per recipe, in request order (NaN: encoders)
    std::vector<double> cosine_loss;                   // encoders: 1 - cos of the embeddings (NaN: token models)
    std::string chosen;                                // the search's choice ("none" = BF16), if searched
};

struct SensitivityReport {
    std::vector<std::string> recipes;           // names
    // "kl" (token models) or "cosine_loss" (sentence encoders): the cost the search minimises.
    std::string metric = "kl";
    double fp_loss = 0;
    std::vector<double> all_quantized_loss, all_quantized_kl, bits_per_weight;  // per recipe
    std::vector<double> all_quantized_cosine_loss;                               // per recipe (encoders)
    std::vector<SensitivityRow> layers;
    // The search (bits_budget > 0):
    std::string mixed_recipe_json;
    double mixed_bits_per_weight = 0, mixed_predicted_kl = 0, mixed_loss = 0, mixed_kl = 0, mixed_cosine_loss = 0;
    double mixed_bits_budget = 0;  // the per-weight budget the search had (bits_budget, or the one derived)
    double seconds = 0;
};

SensitivityReport run_sensitivity(const SensitivityRequest& request, JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
