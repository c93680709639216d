// SPDX-License-Identifier: GPL-3.0-or-later
// Layer sensitivity and automatic mixed precision (docs/RECIPES.md "Sensitivity"):
// - measure_sensitivity: with PTQ done, quantize one layer at a time (every other layer FP) and
//   measure the loss change and KL(FP || quantized) on held-out data -- the per-layer cost of
//   quantizing it, as Model Optimizer's AutoQuantize and Intel Neural Insights rank layers;
//   for sentence encoders the cost is the cosine loss 1 - cos(FP, quantized) of the embeddings;
// - choose_mixed_precision: given the per-layer costs and storage bits of several candidate
//   formats (recipes), pick one candidate per layer minimising the summed cost under a
//   bits-per-weight budget (Lagrangian relaxation: each layer takes argmin KL + lambda * bits,
//   lambda found by bisection), and write the choice as a recipe with per-layer entries. Fused
//   layer groups (q/k/v, gate/up; fused_layers.h) are one decision: consumers run them as one
//   matmul with one scheme, so all members take the same candidate.
// Jobs: progress per layer ("sensitivity"), cancellable between batches.
#pragma once

#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct LayerSensitivity {
    std::string layer;
    double loss_delta = 0;   // mean NLL per scored token, quantized-one-layer minus FP (NaN: encoders)
    double kl = 0;           // mean KL(FP || quantized-one-layer) per scored position, nats (NaN: encoders)
    // Encoders: mean over sentences of 1 - cos(FP embedding, quantized-one-layer embedding)
    // (NaN for token models).
    double cosine_loss = 0;
    double cost = 0;         // what the mixed-precision search minimises: kl, or cosine_loss for encoders
    double weight_bits = 0;  // storage bits of the layer's weight in this recipe
    int64_t parameters = 0;
};

struct SensitivityResult {
    bool encoder = false;    // costs are cosine losses of sentence embeddings
    double fp_loss = 0;
    double all_quantized_loss = 0, all_quantized_kl = 0, all_quantized_cosine_loss = 0;
    std::vector<LayerSensitivity> layers;  // configured weight layers, forward order
};

// `quantized` must be calibrated (run_ptq_pipeline); its switches are restored afterwards.
// Token models (KL to the FP logits) and sentence encoders on sentence data (cosine loss of the
// embeddings); UserError otherwise.
SensitivityResult measure_sensitivity(QuantizedModel& quantized, const Dataset& data, int64_t batch_size, JobSink& sink,
                                      const CancellationToken& cancel);

struct MixedPrecisionCandidate {
    std::string name;                       // the recipe name
    const Recipe* recipe = nullptr;         // settings copied into the result per chosen layer
    std::vector<LayerSensitivity> layers;   // from measure_sensitivity with that recipe
};

struct MixedPrecisionChoice {
    Recipe recipe;                                      // per-layer entries, algorithm "max"
    std::vector<std::pair<std::string, std::string>> chosen;  // layer -> candidate name ("none" = BF16)
    double bits_per_weight = 0;                         // of the candidate layers, scales included
    double predicted_kl = 0;                            // sum of the chosen layers' cost (KL; encoders: cosine loss)
};

// Candidates must cover the same layers. A layer (a fused group) may also stay unquantized
// ("none", 16 bits, KL 0). The recipe shares fused scales when a chosen candidate's recipe does.
// UserError when even the cheapest choice exceeds the budget.
MixedPrecisionChoice choose_mixed_precision(const std::vector<MixedPrecisionCandidate>& candidates,
                                            double bits_per_weight_budget);

}  // namespace ql
