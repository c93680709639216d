// SPDX-License-Identifier: GPL-3.0-or-later
// Calibrated K / V amax for the exports' KV-cache scales (engine/quant/kv_cache_scales.h), from
// a PTQ observer: one calibration pass in which each attention's k_proj and v_proj inputs are
// run through the layer (its current weight and bias, i.e. the FP layer after smoothing) and the
// largest |K| and |V| is kept. This stands in for the KV-cache quantizer of issue 19 and differs
// from it in two ways, both documented in docs/EXPORT.md: K is observed before RoPE (Model
// Optimizer and compressed-tensors observe it after; the rotation can raise a pair's largest
// element by up to sqrt(2)), and QuantLab's forward does not quantize the cache, so evaluations
// do not include the KV-cache error the exported scales imply.
#pragma once

#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/quant/kv_cache_scales.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// Progress phase "calibrate-kv". UserError for models without a KV cache (kv_cache_layers) and
// for NaN / Inf in K or V (naming the layer).
KvCacheScales calibrate_kv_cache_scales(QuantizedModel& quantized, const std::string& format, const Dataset& calibration,
                                        int64_t batch_size, JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
