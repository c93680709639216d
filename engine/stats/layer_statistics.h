// SPDX-License-Identifier: GPL-3.0-or-later
// The model-level part of run_layer_stats (engine/core/layer_stats_types.h): statistics of the
// layers of a model with quantizers installed, given the calibration data, for callers that
// already hold the model (tests, PTQ / QAT code that wants the same numbers of its model).
#pragma once

#include <string>
#include <vector>

#include "engine/core/layer_stats_types.h"
#include "engine/data/dataset.h"
#include "engine/loading/gguf_model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct LayerStatsOptions {
    std::vector<std::string> formats;  // the formats to fit besides the chosen one (catalog names)
    std::vector<std::string> layers;   // empty = every Linear / Conv2d layer
    int top_k = 16;
    int bins = 128;
    int64_t sample_rows = 2048;        // input rows kept per layer
    int64_t batch_size = 16;           // calibration examples per forward
    // The quantizers are a checkpoint's: the chosen fit measures the weight its forward uses
    // (GPTQ's pinned result, learned steps) rather than rounding the stored weight.
    bool checkpoint = false;
    // The model was read from a GGUF file (its weights are the file's decoded values): each
    // layer's chosen fit is the file's own type, with the block scales the file stores.
    const GgufSource* gguf = nullptr;
    // An FP model of the same shapes: errors of the file's weights against it; null = none.
    Model* reference = nullptr;
    // KV caches the recipe quantizes (engine/stats/kv_cache_stats.h): also one record per KV head.
    bool kv_per_head = true;
};

// calibration may be null (weights only). The model's quantizer switches are restored after the
// calibration pass (which runs with every quantizer off). With calibration data, every KV cache
// the recipe quantizes adds its records after the layers (uncalibrated static KV scales are
// calibrated by the same pass); `layers` may name them ("model.layers.0.self_attn.k_cache").
// UserError for an unknown layer or format. A model on a GPU runs the calibration pass there and
// is left on the CPU, where the statistics are computed.
std::vector<LayerStatistics> measure_layer_statistics(QuantizedModel& quantized, const Dataset* calibration,
                                                     const LayerStatsOptions& options, JobSink& sink,
                                                     const CancellationToken& cancel);

}  // namespace ql
