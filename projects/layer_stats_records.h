// SPDX-License-Identifier: GPL-3.0-or-later
// Layer statistics (engine/api/layer_stats_api.h, plain structs) as project-file records
// (projects/layer_stats.h) and back, so that quantlab-cli and the GUI store and show the same
// thing. Pure data conversion: the facade structs have no out-of-line functions, so projects
// still links nothing of the engine. Per layer L the records are (kind: values, range):
//   weight_histogram          signed histogram counts, [lo, hi]; outliers_json holds the layer
//                             (kind, weight shape, chosen format, input amax, first block), the
//                             weight summary (scalars, percentiles, top outliers) and every fit's
//                             scalars, settings, grid and clip threshold
//   weight_log_histogram      log2 |w| counts, [lo, hi] in log2 units
//   channel_absmax            per output channel
//   activation_histogram, activation_log_histogram, activation_channel_absmax   (with activations)
//   block_scales/<format>     the decoded scales (sampled, see FormatFit), no range
//   scale_histogram/<format>  log2(scale) counts, [lo, hi]
// Values are float32 in the blob: histogram counts are exact up to 2^24 per bin.
// Non-finite doubles in outliers_json are the strings "nan", "inf", "-inf".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/api/layer_stats_api.h"
#include "projects/layer_stats.h"

namespace ql::projects {

std::vector<LayerStats> to_project_records(const ql::LayerStatsReport& report, std::int64_t step = 0);

// The inverse: layers in the order their first record appears; records of other kinds are
// ignored. A malformed outliers_json is a UserError naming the layer and kind.
std::vector<ql::LayerStatistics> from_project_records(const std::vector<LayerStats>& records);

// The whole report as JSON (quantlab-cli stats --json; docs/STATISTICS.md).
std::string layer_stats_report_json(const ql::LayerStatsReport& report);

}  // namespace ql::projects
