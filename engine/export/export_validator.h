// SPDX-License-Identifier: GPL-3.0-or-later
// Checks an hf-modelopt export before a byte is written (and a checkpoint when it is read),
// catching the breakages users hit with other tools (shared/design/EXPORT.md "Known
// breakages"): NVFP4 weights written as float8 instead of packed U8, scale keys missing for a
// quantized layer, scale dtypes or shapes that do not match the weight, NaN / Inf scales.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/export/hf_modelopt_layout.h"

namespace ql {

struct HfExportLayer {
    std::string layer;     // module name
    HfLayerFormat format;
    int64_t out = 0, in = 0;  // weight [out, in]
};

// Every problem found (empty: valid), each naming the tensor and what was expected.
std::vector<std::string> find_hf_export_problems(const std::vector<HfExportLayer>& layers,
                                                 const std::map<std::string, const ExportTensor*>& tensors);

// Throws UserError "<where>: <n> problem(s): ..." listing the first problems.
void validate_hf_export(const std::vector<HfExportLayer>& layers, const std::map<std::string, const ExportTensor*>& tensors,
                        const std::string& where);

}  // namespace ql
