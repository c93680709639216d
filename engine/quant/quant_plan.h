// SPDX-License-Identifier: GPL-3.0-or-later
// A recipe applied to one model: the resolved settings of every quantizable layer's weight and
// input quantizers, validated against the layer shapes before any work starts.
#pragma once

#include <string>
#include <vector>

#include "engine/formats/format_codec.h"
#include "engine/models/model.h"
#include "engine/quant/recipe.h"

namespace ql {

struct LayerQuantPlan {
    QuantizableLayer* layer = nullptr;  // owned by the model
    QuantizerSettings weight, input;
    // Resolved against the weight as a matrix [out, in * kh * kw] (blocks and groups run along
    // the input dimension) and against an input row [1, in] (Conv2d: channels last).
    QuantSpec weight_spec, input_spec;
    // Why the weight's format is not the recipe's: a GGUF block type whose rows do not fit takes
    // the type llama-quantize writes instead (weight.options.format is then that type's, and this
    // says "llama.cpp's fallback for gguf_q6_k: rows of 576 are not a multiple of 256"); "" when
    // the recipe's format is used.
    std::string weight_fallback;
};

// One entry per Linear and Conv2d layer, in forward order (embeddings are not quantized by
// recipes). UserError, naming the recipe source and the entry or layer, when: an entry that
// enables or configures quantizers matches no quantizer of the model ("enable": false entries
// may match nothing, as Model Optimizer's default disable lists do); a quantizer's settings do not
// fit its tensor (unknown format, a group longer than the row, granularity not supported ...);
// an enabled quantizer has no format. A group size that leaves a short last group is accepted
// (Model Optimizer pads the last group with zeros, which quantizes the same); a GGUF block type
// that does not fit the rows takes llama.cpp's fallback type (weight_fallback says which).
std::vector<LayerQuantPlan> plan_recipe(const Recipe& recipe, const Model& model);

// The weight as quantizers see it: [out, in * kh * kw] (a view of the layer's weight).
std::vector<int64_t> weight_matrix_shape(const QuantizableLayer& layer);
// Features of one input position: Linear in_features, Conv2d input channels.
int64_t input_features(const QuantizableLayer& layer);

}  // namespace ql
