// SPDX-License-Identifier: GPL-3.0-or-later
// The what-if view's engine (docs/GUI.md "What-if"): a recipe, a KV-cache format and a rotation
// tried on a small calibration batch without a full run. Two copies of the model are quantized
// with round-to-nearest weights and max-calibrated inputs -- the recipe as it is ("before") and
// the recipe with the chosen levers ("after"; its own algorithm is not run, which is what keeps
// this quick) -- and compared tensor by tensor and at the output. Facade header: plain types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/api/ptq_api.h"
#include "engine/core/layer_stats_types.h"
#include "engine/jobs/job.h"

namespace ql {

struct WhatIfRequest {
    std::string model;         // HF folder or "demo" (a full-precision model)
    std::string recipe;        // preset or recipe file: the weight / input formats
    std::string calibration;   // data spec (docs/DATA.md), training split
    std::string eval_data;     // "" = the calibration spec's validation split
    std::string kv_cache;      // the choice: a KV-cache preset (fp8, nvfp4 ...), "none" or "" (the recipe's)
    std::string rotate;        // the choice: hadamard, rht, none or "" (the recipe's)
    std::string device = "cpu";  // where the models and data live: cpu | cuda | cuda:N (engine/core/compute_device.h)
    int64_t samples = 16;      // calibration examples
    int64_t eval_samples = 32; // examples of the small evaluation batch
    int64_t sequence_length = 0;
    uint64_t seed = 0;
    int bins = 96;             // histogram bins
};

// One tensor a quantizer sees, before and after the levers: a Linear's input (kind
// "activation"), or an attention's cached keys / values ("key", "value"). max_over_rms =
// max |x| / sqrt(mean x^2); kurtosis as TensorStatistics (Gaussian 3). The histograms share one
// range (the wider of the two) so that they overlay; grid: the representable values of the
// tensor's quantizer at its largest scale (empty when the tensor is not quantized).
struct WhatIfTensor {
    std::string name;   // layer or "<attention>.k_cache" / ".v_cache"
    std::string kind;   // activation | key | value
    std::string quantizer_before, quantizer_after;  // describe() of the quantizer ("off")
    double kurtosis_before = 0, kurtosis_after = 0;
    double max_over_rms_before = 0, max_over_rms_after = 0;
    double sqnr_before = 0, sqnr_after = 0;  // the tensor against its fake quantization, dB (NaN: not quantized)
    HistogramData histogram_before, histogram_after;
    std::vector<double> grid_before, grid_after;
};

// A quantized Linear's output error against the FP layer on FP inputs (W and A quantized as the
// recipe says), before and after the levers: PtqLayerSummary::output_sqnr_db of both runs.
struct WhatIfLayer {
    std::string layer;
    double sqnr_before = 0, sqnr_after = 0;
};

struct WhatIfReport {
    std::string model_path, recipe_name;
    std::string kv_cache_before = "off", kv_cache_after = "off";  // described
    std::string rotation_before = "off", rotation_after = "off";
    std::vector<std::string> rotation_notes;   // what the rotation did and skipped on this model
    bool has_kv_cache = false;                 // a decoder (encoders keep none)
    std::vector<WhatIfTensor> tensors;         // activations in forward order, then keys and values
    std::vector<WhatIfLayer> layers;
    // Output of the quantized model against the FP model on the evaluation batch: decoders the
    // mean KL(FP || Q) per position (nats); encoders (BERT) 1 - mean cosine of the mean-pooled
    // sentence embeddings. output_metric names it ("kl" or "1-cosine").
    std::string output_metric;
    double output_before = 0, output_after = 0;
    double weight_bytes_before = 0, weight_bytes_after = 0;
    KvCacheMemorySummary kv_memory_before, kv_memory_after;
    int64_t eval_examples = 0;
    std::string recipe_json_after;             // the recipe with the choice, for the full run
    double seconds = 0;
};

// Progress phases "load", "before", "after", "compare". Cancellable between phases and batches.
// UserError for bad input (a KV format for an encoder, a rotation that does not fit, ...).
WhatIfReport run_what_if(const WhatIfRequest& request, JobSink& sink, const CancellationToken& cancel);

std::string what_if_report_json(const WhatIfReport& report);

}  // namespace ql
