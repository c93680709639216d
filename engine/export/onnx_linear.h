// SPDX-License-Identifier: GPL-3.0-or-later
// One Linear layer of a quantized model as ONNX QDQ nodes (shared/design/EXPORT_LAYOUTS_2.md
// section 2; Model Optimizer's ONNX path writes the same pattern):
//   x -> [Mul(pre_quant_scale)] -> [QuantizeLinear -> DequantizeLinear] -> MatMul -> [Add(bias)]
//                                         DequantizeLinear(W^T codes, scales) --^
// The weight is stored transposed ([in, out], so that MatMul needs no Transpose), its codes those
// QuantLab's quantized forward decodes (exact_weight_codes.h), its scales transposed with it:
//   int b symmetric   INT4 (b = 4) or INT8 (other b: the codes fit), no zero point
//   int b asymmetric  UINT4 / UINT8 codes with zero points of the same type
//     group G         scale [in / G, out], axis 0, block_size G (opset 21 blocked DQ)
//     channel         scale [out], axis 1;  tensor: a scalar scale
//   fp8_e4m3 / e5m2   FLOAT8E4M3FN / FLOAT8E5M2 codes, per-tensor or per-output-channel scale
// Inputs (per tensor only): int8 symmetric -> Q/DQ with an INT8 zero point 0 (scale amax / 127;
// a static scale gets Clip(+-127 scale) first: QuantLab's codes stop at -127, QuantizeLinear's
// at -128); fp8 -> Q/DQ with a FLOAT8 zero point 0 (scale amax / 448 or / 57344; saturating). Static scales
// are the calibrated amax's; dynamic ones are computed in the graph from ReduceMax(Abs(x)) as
// QuantLab computes them per batch. A layer without an enabled weight quantizer is a float32
// MatMul. Anything else (NVFP4, MX, GGUF, NF4, LLM.int8, per-token or block inputs, online
// rotations) is refused with the layer named: ONNX Runtime has no kernel for FLOAT4E2M1 and the
// rest has no QDQ form.
#pragma once

#include <string>

#include "engine/export/export_manifest.h"
#include "engine/export/onnx_graph_writer.h"

namespace ql {

class QuantizedModel;

// What export --as onnx writes, for error messages and docs.
std::string onnx_supported_formats_text();

// Checks that every enabled quantizer of `q` has an ONNX QDQ form (UserError naming the layer
// otherwise), before anything is written.
void check_onnx_quantizers(const QuantizedModel& q);

// Emits module `module` (HF name, weight [out, in]) applied to value `x` [..., in]; returns the
// output value [..., out]. Records the layer's quantized weight digest in `manifest` when its
// weight is quantized.
std::string emit_onnx_linear(OnnxGraphWriter& g, const QuantizedModel& q, const std::string& module, const std::string& x,
                             ExportManifest& manifest);

}  // namespace ql
