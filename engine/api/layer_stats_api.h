// SPDX-License-Identifier: GPL-3.0-or-later
// Per-layer statistics of weights and calibration activations as a job: the engine behind
// `quantlab-cli stats` and the GUI's layer views (docs/STATISTICS.md). The records and the
// plain-pointer statistics functions are in engine/core/layer_stats_types.h. Facade header.
#pragma once

#include "engine/core/layer_stats_types.h"
#include "engine/jobs/job.h"

namespace ql {

// Progress phases "load", "calibrate", then per layer "weights", "activations", "formats";
// layer_metric() reports "weight_amax", "weight_kurtosis", "activation_kurtosis",
// "clipped_fraction", "output_sqnr_db" (chosen format) and "sqnr_db/<format>",
// "weight_sqnr_db/<format>", "clipped_fraction/<format>" for every format. Cancellable between
// layers and calibration batches. UserError for an unknown layer / format or bad input.
LayerStatsReport run_layer_stats(const LayerStatsRequest& request, JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
