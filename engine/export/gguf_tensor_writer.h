// SPDX-License-Identifier: GPL-3.0-or-later
// Writes a GGUF file from float tensors produced one at a time (the export's and the export
// benchmark's common path): each tensor is produced, encoded into one reused buffer and streamed
// to the file, so memory stays at one tensor beyond the model.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/jobs/job.h"

namespace ql {

struct GgufTensorPlan {
    std::string name;
    std::vector<int64_t> ne;              // ggml order
    GgmlType type = GgmlType::F32;
    std::function<at::Tensor()> values;   // float32, numel = product of ne (any shape)
    // ggml's importance (imatrix) for the searched types: ne[0] floats shared by every row, or
    // empty for the plain search (encode_gguf_tensor). For 3-D tensors, per expert: see there.
    std::vector<float> importance;
};

// Returns the file size. Progress: `phase`, one unit per tensor; cancel checked before each.
uint64_t write_gguf_tensors(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorPlan>& tensors,
                            bool force, JobSink& sink, const CancellationToken& cancel, const std::string& phase = "export");

}  // namespace ql
