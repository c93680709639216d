// SPDX-License-Identifier: GPL-3.0-or-later
// Reads a Model Optimizer unified HF checkpoint (a folder with hf_quant_config.json; layouts in
// hf_modelopt_layout.h) as a QuantLab quantized model: every quantized Linear's weight is
// dequantized from its packed codes and scales, installed as the layer's weight and pinned as
// its quantized weight; static input quantizers get the amax that reproduces input_scale
// exactly; pre_quant_scale is restored. The forward then equals the model that was exported,
// bit for bit. open_model (engine/loading/model_source.h) uses this for such folders.
#pragma once

#include <memory>
#include <string>

#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

bool is_hf_modelopt_checkpoint(const std::string& folder);

struct HfModeloptModel {
    std::unique_ptr<Model> model;
    std::unique_ptr<QuantizedModel> quantization;  // installed into *model; destroy first
};

// UserError naming the file and tensor for malformed JSON, unsupported quant_algo, missing /
// mis-typed / mis-shaped tensors and NaN or Inf scales (export_validator.h).
HfModeloptModel load_hf_modelopt_checkpoint(const std::string& folder);

}  // namespace ql
