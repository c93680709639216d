// SPDX-License-Identifier: GPL-3.0-or-later
// A recipe's per-layer plan as NVIDIA Model Optimizer's quantization config: the dict that
// `modelopt.torch.quantization.quantize(model, config, forward_loop)` takes (modelopt 0.47
// config.py QuantizeConfig: "quant_cfg", an ordered list of {"quantizer_name", "cfg", "enable"}
// entries, and "algorithm"), resolved layer by layer so that the plan survives unchanged:
//   {"quantizer_name": "*", "enable": false}                       everything off first
//   {"quantizer_name": "*<layer>.weight_quantizer", "cfg": {...}}  one entry per configured quantizer
//   {"quantizer_name": "*<layer>.*_quantizer", "enable": false}    layers the plan keeps in BF16
// The leading "*" lets the names match under a wrapper module (BertModel's "encoder.layer.0..." is
// "bert.encoder.layer.0..." in BertForSequenceClassification); the rest is the exact module name,
// so no entry reaches a neighbouring layer ("layers.1." never matches "layers.11.").
// Quantizer attributes as Model Optimizer's own presets spell them (NVFP4_DEFAULT_CFG,
// FP8_DEFAULT_CFG, MXFP4_DEFAULT_CFG, INT4_AWQ_CFG, INT8_DEFAULT_CFG):
//   nvfp4        num_bits [2, 1], block_sizes {"-1": 16, "type": "dynamic", "scale_bits": [4, 3]}
//   fp8_e4m3     num_bits [4, 3], axis null (tensor) or the channel axis; "type": "dynamic" for a
//                dynamic input
//   mxfp8/6/4, mxint8  num_bits [4, 3] [5, 2] [3, 2] [2, 3] [2, 1] / 8, block_sizes
//                {"-1": 32, "type": "dynamic", "scale_bits": [8, 0]} (the OCP floor rule, Model
//                Optimizer's; rceil is not expressible)
//   int2..int8   num_bits N, narrow_range true (QuantLab clamps to +-(2^(N-1) - 1)), axis null /
//                the channel axis, or block_sizes {"-1": G, "type": "static"} for groups
// JSON has no tuples and no integer keys: num_bits / scale_bits are lists and the block axis is
// the string "-1". Model Optimizer's validator refuses the string key, so a loader turns them
// back (scripts/modelopt_plan.py load_modelopt_plan; docs/CLI.md "recipe").
// Plain C++ apart from the QuantizedModel it reads.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/quant/quantized_model.h"

namespace ql {

struct ModeloptPlanCounts {
    int64_t quantized_layers = 0;  // layers with an enabled weight quantizer
    int64_t disabled_layers = 0;   // layers the plan keeps in high precision
};

// {"quant_cfg": [...], "algorithm": ...} for the layers `q` wraps (its recipe resolved against its
// model, no calibration). UserError naming the layer, the quantizer and the format for settings
// Model Optimizer cannot express (fp8_e5m2 per tensor, nf4, the GGUF formats, asymmetric
// integers, MX rceil, a dynamic NVFP4 input, calibrators other than max), and naming the section
// for a KV-cache or rotation section (not part of a per-layer plan here).
nlohmann::ordered_json modelopt_plan_config(const QuantizedModel& q, ModeloptPlanCounts* counts = nullptr);

}  // namespace ql
