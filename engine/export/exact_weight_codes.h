// SPDX-License-Identifier: GPL-3.0-or-later
// The codes an export stores for a quantized weight: the weight's codes on the scales
// encode_weight() computes, repaired element by element where the quantized forward's weight
// (GPTQ's pinned result) lies on another grid point of the same scales, then checked by
// decoding, so that the stored codes decode (QuantLab's arithmetic) to exactly the weight the
// quantized forward uses. Shared by the compressed-tensors and ONNX exporters.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/formats/format_codec.h"

namespace ql {

class LayerQuantizer;

// `shape`: the weight as a matrix [out, in] (weight_matrix_shape). UserError naming the layer
// and the first element that cannot be stored (families int, fp8, nvfp4, mx are repaired;
// another family must already decode exactly).
EncodedTensor exact_weight_codes(LayerQuantizer& layer, const std::vector<int64_t>& shape);

}  // namespace ql
