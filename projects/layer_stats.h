// SPDX-License-Identifier: GPL-3.0-or-later
// Per-layer statistics of a run (histograms, scales, outlier summaries) and the compact blob
// they are stored as.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ql::projects {

struct LayerStats {
    std::string layer;   // the layer's parameter-name prefix, e.g. "model.layers.0.mlp.up_proj"
    std::string kind;    // what `values` holds: "weight_histogram", "activation_histogram",
                         // "block_scales", "channel_absmax" … (free text, chosen by the engine)
    std::int64_t step = 0;     // the step it was taken at (0 for one-shot PTQ)
    double range_min = 0.0;    // histograms: left edge of the first of equal-width bins
    double range_max = 0.0;    // histograms: right edge of the last bin; both 0 for non-histograms
    std::vector<float> values; // bin counts, or one scale per block / channel
    std::string outliers_json = "{}";  // outlier summary, a JSON object (e.g. absmax, count beyond kσ)
};

// Blob layout (little-endian), 32-byte header then the data:
//   0 "QLSB"   4 u16 version (1)   6 u16 element type (1 = float32)   8 u64 count
//   16 f64 range_min   24 f64 range_max   32 float32 values[count]
// The blob is exactly 32 + 4·count bytes.
inline constexpr std::size_t kLayerStatsHeaderBytes = 32;

std::vector<unsigned char> encode_layer_stats_blob(const LayerStats& stats);
// Fills range_min, range_max and values of `out`; a malformed blob is a UserError naming `file`.
void decode_layer_stats_blob(const void* blob, std::size_t bytes, LayerStats& out, const std::filesystem::path& file);

}  // namespace ql::projects
