// SPDX-License-Identifier: GPL-3.0-or-later
// The per-layer layout of a compressed-tensors checkpoint (the format vLLM and llm-compressor
// use natively; shared/design/EXPORT_LAYOUTS_2.md section 1; compressed-tensors 0.20
// compressors/{pack_quantized,naive_quantized,nvfp4,mxfp4}, quantization/quant_args.py): which
// QuantLab quantizer settings map to which QuantizationScheme and compression format, the tensors
// each one stores (names, dtypes, shapes), packing one layer, and decoding it back with QuantLab's
// arithmetic or with the consumer's. Used by the writer (compressed_tensors_export.h) and the
// Export Doctor (export_doctor.h).
//
// Supported (QuantLab weight / input quantizers -> format, tensors of a Linear [out, in]):
//   intB sym|asym group G or channel / off    pack-quantized (W4A16, W8A16, ..._ASYM)
//       weight_packed I32 [out, ceil(in*B/32)] (code + 2^(B-1) LSB-first, element i at bit i*B),
//       weight_scale F32 [out, in/G] or [out, 1], weight_shape I64 [2],
//       weight_zero_point I32 [ceil(out*B/32), in/G or 1] (asym; packed along out)
//   int8 sym channel / int8 static tensor      int-quantized (W8A8, SmoothQuant)
//       weight I8 [out, in], weight_scale F32 [out, 1], input_scale F32 [1]
//   fp8_e4m3 tensor|channel / fp8_e4m3 static tensor | dynamic tensor | off
//                                              float-quantized (naive-quantized when inputs are off)
//       weight F8_E4M3 [out, in], weight_scale F32 [1] or [out, 1], input_scale F32 [1] (static)
//   nvfp4 / nvfp4 static | off                 nvfp4-pack-quantized (NVFP4 W4A4, NVFP4A16)
//       weight_packed U8 [out, in/2] (element 2k low nibble), weight_scale F8_E4M3 [out, in/16],
//       weight_global_scale F32 [1] = 1 / weight_scale_2, input_global_scale F32 [1] = 1 / input_scale
//   mxfp4 / mxfp4 dynamic floor | off          mxfp4-pack-quantized (MXFP4, MXFP4A16)
//       weight_packed U8 [out, in/2], weight_scale U8 (E8M0) [out, in/32]
// Scales are those QuantLab computed (INT symmetric: amax / (2^(B-1) - 1), where
// compressed-tensors' own observer would use amax / (2^(B-1) - 0.5); docs/EXPORT.md): the codes
// decode to QuantLab's quantized weight exactly in compressed-tensors' arithmetic, except NVFP4,
// whose reciprocal global scale makes compressed-tensors compute e2m1 x (s8 / G) instead of
// e2m1 x (s8 x g) (at most one float32 ulp apart).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/export/hf_modelopt_layout.h"

namespace ql {

class LayerQuantizer;

// compressed-tensors QuantizationArgs, as QuantLab writes them (keys compressed-tensors 0.20
// serialises; null fields are omitted as it omits them).
struct CtArgs {
    int num_bits = 8;
    std::string type = "int";   // int | float
    bool symmetric = true;
    std::string strategy;       // tensor | channel | group | tensor_group
    int64_t group_size = 0;     // 0: null
    std::string dynamic = "false";  // false | true | local
    std::string scale_dtype;    // "" | torch.float8_e4m3fn | torch.uint8
    std::string observer;       // "" | static_minmax (static inputs)
    bool operator==(const CtArgs& o) const;
};

struct CtScheme {
    std::string format;  // pack-quantized | int-quantized | float-quantized | naive-quantized |
                         // nvfp4-pack-quantized | mxfp4-pack-quantized
    CtArgs weights;
    std::optional<CtArgs> input;  // input_activations
    bool operator==(const CtScheme& o) const { return format == o.format && weights == o.weights && input == o.input; }
    // A short stable key ("pack-quantized w4 int sym group 128 | -") for grouping and messages.
    std::string key() const;
    bool input_static() const { return input && input->dynamic != "true"; }
};

// The QuantLab layer's quantizers as a compressed-tensors scheme; UserError naming the layer and
// its quantizers and listing the supported combinations when there is none.
CtScheme ct_scheme_of(const LayerQuantizer& layer);
std::string ct_supported_formats_text();

// The scheme a config group describes (the reader's and the doctor's view); UserError naming
// `where` for combinations QuantLab does not read.
CtScheme ct_scheme_from_args(const std::string& format, const CtArgs& weights, const std::optional<CtArgs>& input,
                             const std::string& where);

// What the checkpoint holds for one quantized layer of weight shape [out, in].
std::vector<ExpectedTensor> ct_expected_tensors(const std::string& layer, const CtScheme& s, int64_t out, int64_t in);

// One packed layer and what the export manifest records about it.
struct CtPackedLayer {
    std::vector<ExportTensor> tensors;
    float nvfp4_global_scale = 0;  // QuantLab's g = weight_scale_2 (NVFP4; the file stores 1 / g)
};

// The layer's tensors in scheme `s` (= ct_scheme_of(layer)): codes that decode (QuantLab's
// arithmetic) to the weight as the quantized forward uses it, GPTQ's pinned result included, on
// the scales of the weight the quantizer reads; UserError naming the element otherwise.
CtPackedLayer pack_ct_layer(LayerQuantizer& layer, const CtScheme& s);

// Whose arithmetic decodes the stored tensors: QuantLab's (NVFP4: e2m1 x (s8 x g), g given) or
// compressed-tensors' (NVFP4: e2m1 x (s8 / G) in float32, G = weight_global_scale).
enum class CtArithmetic { QuantLab, CompressedTensors };

// The dequantized weight [out, in] (float32, row-major) from a layer's tensors (local dtypes and
// shapes already checked against ct_expected_tensors). `nvfp4_g`: QuantLab's global scale for
// CtArithmetic::QuantLab (NaN: 1 / weight_global_scale).
std::vector<float> dequantize_ct_layer(const std::string& layer, const CtScheme& s, int64_t out, int64_t in,
                                       const std::vector<ExportTensor>& tensors, CtArithmetic arithmetic,
                                       float nvfp4_g = std::nanf(""));

}  // namespace ql
