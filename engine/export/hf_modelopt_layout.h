// SPDX-License-Identifier: GPL-3.0-or-later
// The per-layer tensors of NVIDIA Model Optimizer's unified HF checkpoint (shared/design/
// EXPORT.md section 1; NVIDIA/Model-Optimizer modelopt/torch/export/quant_utils.py
// get_quantization_format / to_quantized_weight / pack_int4_in_uint8, qtensor/nvfp4_tensor.py,
// qtensor/mxfp4_tensor.py): which QuantLab quantizer settings map to which `quant_algo`, the
// tensors each one writes (names, dtypes, shapes), and packing / unpacking of one layer. Used by
// the writer (hf_modelopt_export.h), the reader (hf_modelopt_checkpoint.h) and the validator.
//
// Supported (QuantLab weight / input quantizer -> quant_algo, tensors of a Linear [out, in]):
//   nvfp4 / nvfp4 static        NVFP4        weight U8 [out, in/2], weight_scale F8_E4M3
//                                             [out, in/16], weight_scale_2 F32 [], input_scale F32 []
//   nvfp4 / nvfp4 static + pqs  NVFP4_AWQ    the same plus pre_quant_scale F32 [in]
//   nvfp4 / off                 W4A16_NVFP4  NVFP4 without input_scale
//   fp8_e4m3 tensor / fp8_e4m3 static tensor
//                               FP8          weight F8_E4M3 [out, in], weight_scale F32 [],
//                                             input_scale F32 []
//   int4 symmetric group G / off (+ optional pqs)
//                               W4A16_AWQ    weight U8 [out/2, in] (two's complement nibbles along
//                                             out, row 2i low), weight_scale F32 [out, in/G],
//                                             pre_quant_scale F32 [in] when the layer has one
//   mxfp4 / mxfp4 dynamic floor MXFP4        weight U8 [out, in/2], weight_scale U8 (E8M0) [out, in/32]
// Scalars: weight_scale_2 = amax / (6 * 448) and input_scale = amax / (6 * 448) (NVFP4),
// weight_scale = amax / 448 and input_scale = amax / 448 (FP8), exactly as QuantLab's kernels
// compute them (kernels/nvfp4.h, kernels/scaled_fp8_element.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/quant_options.h"
#include "engine/io/safetensors_file.h"

namespace ql {

class LayerQuantizer;

struct HfLayerFormat {
    std::string quant_algo;  // "NVFP4", "NVFP4_AWQ", "W4A16_NVFP4", "FP8", "W4A16_AWQ", "MXFP4"
    int64_t group_size = 0;  // elements per weight scale along `in` (0: per tensor, FP8)
    bool input_quantized = false;  // has an input quantizer (input_scale for NVFP4 / FP8)
    bool pre_quant_scale = false;  // AWQ smoothing factor written / expected
    QuantOptions weight, input;    // the QuantLab quantizers it stands for (reader)
    bool input_dynamic = false;
};

// The QuantLab layer's quantizers as a Model Optimizer format; UserError naming the layer and
// listing the supported combinations when there is none.
HfLayerFormat hf_format_of(const LayerQuantizer& layer);

// The format a hf_quant_config.json entry names (quant_algo, group_size), for the reader.
// UserError for algorithms QuantLab does not read.
HfLayerFormat hf_format_named(const std::string& quant_algo, int64_t group_size, const std::string& where);

std::string hf_supported_formats_text();

// One tensor of the export, owning its bytes.
struct ExportTensor {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// What the checkpoint must hold for one quantized layer of weight shape [out, in].
struct ExpectedTensor {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::F32;
    std::vector<int64_t> shape;
};
std::vector<ExpectedTensor> hf_expected_tensors(const std::string& layer, const HfLayerFormat& f, int64_t out, int64_t in);

// The layer's tensors in format `f` (= hf_format_of(layer)). The codes are those of the weight
// as the quantized forward uses it (pinned GPTQ results included) on the scales of the weight
// the quantizer reads; the function checks that decoding them gives that weight exactly and
// throws UserError otherwise. Implemented in hf_modelopt_pack.cpp (row tiles, parallel).
std::vector<ExportTensor> pack_hf_layer(LayerQuantizer& layer, const HfLayerFormat& f);

// The dequantized weight [out, in] (float32, row-major) from a layer's stored tensors, looked
// by name from `tensors` (the validator has checked their dtypes and shapes).
std::vector<float> dequantize_hf_layer(const std::string& layer, const HfLayerFormat& f, int64_t out, int64_t in,
                                       const std::vector<ExportTensor>& tensors);

// The amax a static input quantizer needs so that QuantLab's kernels compute exactly `scale`
// (NVFP4: amax / (6 * 448); FP8: amax / 448, or 1 for amax 0). UserError when none exists.
float input_amax_for_scale(const HfLayerFormat& f, float scale, const std::string& where);
// The scale written for a calibrated input amax.
float input_scale_for_amax(const HfLayerFormat& f, float amax);

}  // namespace ql
