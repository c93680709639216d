// SPDX-License-Identifier: GPL-3.0-or-later
// The fake-quantized full-precision checkpoint ("fakequant", shared/design/EXPORT.md section 3):
// the source model's HF layout, tensor names and dtypes, with every quantized weight replaced by
// its dequantized value (the weight the quantized forward uses), plus quantlab_recipe.json. For
// tools that cannot read low-bit formats and for training elsewhere. What it cannot hold, said
// in the result's warnings: activation quantization (weights only), and AWQ / SmoothQuant
// pre_quant_scales, which are folded into the weight columns (W' = W_q * diag(s): the same
// product up to float rounding, no longer on the format's grid).
#pragma once

#include <string>

#include "engine/export/hf_modelopt_export.h"

namespace ql {

// Written via "<out>.partial" and a rename; existing `out` only with `force`. Tensors keep the
// dtype they have in the source folder's safetensors (float32 for QuantLab checkpoints); a
// dequantized weight stored in a narrower dtype than float32 is rounded (a warning says so).
// `before_commit` sees the complete partial folder (the Export Doctor).
FolderExportResult export_fakequant(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                    bool force, JobSink& sink, const CancellationToken& cancel,
                                    const FolderCheck& before_commit = {});

}  // namespace ql
