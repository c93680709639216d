// SPDX-License-Identifier: GPL-3.0-or-later
// Depth-wise error propagation (docs/DIAGNOSIS.md): the FP model and the quantized model run side
// by side on the same batches, their residual streams (engine/models/residual_stream.h) read at
// every sub-layer boundary and, for the isolated and KL measurements, replaced:
//   propagated error at stage k:  quantized stream vs FP stream;
//   isolated error of a part:     the quantized model's part run on the FP stream entering it,
//                                 against the FP stream leaving it (replace, run, stop);
//   KL of a stream s at stage k:  s continued by the FP model to the logits, KL(FP || that) --
//                                 for the quantized stream (prefix KL: everything up to k
//                                 quantized) and for each part's isolated output;
//   layers:                       each quantized layer against itself unquantized, on the inputs
//                                 the quantized model's unquantized forward gives it (the PTQ
//                                 report's output error, measured on this data; with SmoothQuant
//                                 folded into a norm these inputs are the smoothed ones).
// Errors are taken over the scored positions (targets != ignore), where the model predicts.
// Cost per batch: 2 full forwards, 2 partial ones per block, 5 per block + 1 FP forwards for the
// KLs (token models), one more with every quantizer off for the layers.
// A Job: progress(examples, total, "divergence"), cancellable between forwards.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/core/divergence_report.h"
#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct DepthDivergenceOptions {
    int64_t batch_size = 16;     // examples per forward
    int64_t worst_tokens = 50;   // tokens kept with their context and curves
    // Readable text of token ids (the worst tokens' context and tokens); empty: "#<id>".
    std::function<std::string(const std::vector<int64_t>& ids)> decode;
};

// `fp` is the reference; `quantized` holds the quantizers of the other model (its switches are
// used as they are and restored afterwards). Both must have the same architecture and shapes
// (UserError otherwise, and for models without a residual stream: MLP, CNN). Encoders (BERT):
// no logits, the hidden-state errors and the sentence-embedding cosine only.
DivergenceReport measure_divergence(Model& fp, QuantizedModel& quantized, const Dataset& data,
                                    const DepthDivergenceOptions& options, JobSink& sink,
                                    const CancellationToken& cancel);

}  // namespace ql
