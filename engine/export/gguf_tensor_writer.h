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
    // Per-column importance (an imatrix entry: ne[0] values, or ne[0] * ne[2]) for the quantizers
    // that take one; empty = the reference search.
    std::vector<float> importance;
    // When set, these bytes (ggml_tensor_bytes(type, ne) of them) are written as they are and
    // `values` is not called: a GGUF source tensor whose type does not change.
    const uint8_t* copy_from = nullptr;
    // Called with the encoded bytes before they are written (e.g. to check they decode to the
    // values a quantized checkpoint holds); may throw.
    std::function<void(const uint8_t* bytes, uint64_t size)> check;
};

// Returns the file size. Progress: `phase`, one unit per tensor; cancel checked before each.
uint64_t write_gguf_tensors(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorPlan>& tensors,
                            bool force, JobSink& sink, const CancellationToken& cancel, const std::string& phase = "export");

}  // namespace ql
