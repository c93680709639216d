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
    // ggml's importance (an imatrix entry) for the searched types: ne[0] floats shared by every
    // row; empty = the plain reference search (encode_gguf_tensor).
    std::vector<float> importance;
    // When set, these bytes (ggml_tensor_bytes(type, ne) of them) are written as they are and
    // `values` is not called: a GGUF source tensor whose type does not change.
    const uint8_t* copy_from = nullptr;
    // When set, writes the tensor's bytes itself (size = ggml_tensor_bytes(type, ne)) instead of
    // values + encode_gguf_tensor: a checkpoint layer whose bytes must decode to its quantized
    // weight exactly (engine/export/gguf_export.cpp). May throw.
    std::function<void(uint8_t* out, uint64_t size)> encode;
};

// Returns the file size. Progress: `phase`, one unit per tensor; cancel checked before each.
uint64_t write_gguf_tensors(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorPlan>& tensors,
                            bool force, JobSink& sink, const CancellationToken& cancel, const std::string& phase = "export");

}  // namespace ql
