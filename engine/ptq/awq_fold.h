// SPDX-License-Identifier: GPL-3.0-or-later
// AWQ with its scales folded into the preceding operation (recipe "algorithm": {"method": "awq",
// "fold": true}), as AutoAWQ and llm-compressor apply it (llm-compressor
// src/llmcompressor/modifiers/awq/mappings.py: input_layernorm -> q/k/v, v_proj -> o_proj,
// post_attention_layernorm -> gate/up, up_proj -> down_proj), so that the model needs no
// pre_quant_scale: formats without one (compressed-tensors, GGUF) can hold it.
//   - layers reading one foldable norm (engine/ptq/input_groups.h) share one scale s, searched by
//     awq_search (awq.h) on their weights stacked along the output dimension (the sum of their
//     output errors on the same inputs); the norm's weight and bias are multiplied by 1 / s
//     (= pre_quant_scale), each weight by s;
//   - o_proj (and BERT's attention.output.dense) folds into v_proj's (value's) output rows when
//     their widths agree (no grouped-query repetition); down_proj into up_proj's rows;
//   - every other layer is rounded to nearest (no smoothing).
// In full precision the model is unchanged up to float rounding.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/jobs/job.h"
#include "engine/ptq/awq.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct FoldedAwqLayer {
    std::string layer;
    std::string folded_into;  // the norm or Linear that took 1 / s; "" = rounded to nearest
    double alpha = -1;        // the grid alpha chosen (-1: RTN kept)
};

// fp_samples: each layer's FP calibration inputs [n, in]. Progress phase "awq". `scope`: the
// layers to handle (the layer-by-layer pipeline's current block); empty = every layer.
// Weights kept as stored become owned float32 before they are scaled (Model::make_weight_float32).
std::vector<FoldedAwqLayer> run_folded_awq(QuantizedModel& q, const std::map<std::string, at::Tensor>& fp_samples,
                                           const AwqOptions& options, JobSink& sink, const CancellationToken& cancel,
                                           const std::set<std::string>& scope = {});

}  // namespace ql
