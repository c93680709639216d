// SPDX-License-Identifier: GPL-3.0-or-later
// Merging adapters into their base (what PEFT's merge_and_unload does; for a 4-bit base it
// dequantizes, adds and quantizes again: peft/tuners/lora/bnb.py Linear4bit.merge). An adapted
// layer computes base(x) + x D^T with D = (alpha / r) B A; merged, its weight becomes W_eff + D,
// W_eff the weight the base's forward multiplies x by (the dequantized weight times the
// pre_quant_scale's columns). Kept in full precision the merged model computes the adapted one
// exactly (up to float rounding); quantized again in the base's format it moves every weight
// whose nearest code changes -- the merge cost that the preview (merge_preview.h) measures.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "engine/lora/lora_adapters.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// W_eff [out, in] float32 of a Linear layer of `base` (no gradient).
at::Tensor base_forward_weight(const QuantizedModel& base, const LinearLayer& layer);

struct MergedLayer {
    std::string module;
    std::string format;           // the base's weight format, "fp32" without a weight quantizer
    int64_t elements = 0;
    double codes_changed = 0;     // fraction of element codes that differ after re-quantization (quantized layers)
    double update_norm = 0;       // ||D||_F / ||W_eff||_F: how large the adapter's update is
    double requant_error = 0;     // ||Q(W_eff + D) - (W_eff + D)||_F / ||D||_F: the update the re-quantization loses or distorts
};

// Merges every adapter into its layer: the layer's master weight becomes W = W_q + D / s
// (column-wise; s the pre_quant_scale, 1 without), so that with its pre_quant_scale the layer
// computes W_eff + D, and the adapters are switched off. The quantizers are left as they are:
// on, the layer re-quantizes W in its format (the re-quantized merge, as PEFT merges onto a
// 4-bit base: dequantize, add, quantize). Returns one row per adapted layer, codes_changed
// measured with the weight quantizer's own encoding before and after. UserError for a base with
// online rotations (the merge would have to rotate D).
std::vector<MergedLayer> merge_adapters(QuantizedModel& base, LoraAdapters& adapters);

// After merge_adapters: every other weight-quantized layer's master weight becomes its quantized
// weight, and all quantizers (weights, inputs, KV cache) go off -- the model then computes the
// merged base in full precision, exactly W_eff + D per adapted layer.
void dequantize_unmerged(QuantizedModel& base, const LoraAdapters& adapters);

// The model's HF state (file names and layouts, float32) with every pre_quant_scale folded into
// its layer's weight columns (W diag(s)): with the quantizers off, what an HF folder of the
// full-precision merge must hold.
std::vector<std::pair<std::string, at::Tensor>> full_precision_state(const QuantizedModel& base);

}  // namespace ql
