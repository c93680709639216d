// SPDX-License-Identifier: GPL-3.0-or-later
// Builds one ONNX graph node by node (engine/io/onnx_file.h) while its initializers stream to an
// external data file, so an export holds one layer's tensors at a time and a model past
// protobuf's 2 GiB limit still has a small .onnx file (ONNX external data: `location`, `offset`,
// `length`; offsets 4096-aligned so that ONNX Runtime can memory-map them). Tensors under
// kInlineBytes stay inside the .onnx file (scales, zero points, norms' gains of small models).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/atomic_file.h"
#include "engine/io/onnx_file.h"

namespace ql {

class OnnxGraphWriter {
public:
    static constexpr size_t kInlineBytes = 1024;
    static constexpr int64_t kAlignment = 4096;

    // `data_path`: the external data file to create (written atomically: it appears on finish());
    // `data_location`: its name as the model refers to it, relative to the .onnx file's folder.
    OnnxGraphWriter(const std::string& data_path, std::string data_location);

    // An initializer named `name` holding `bytes` in raw_data layout (little endian; 4-bit types
    // packed two per byte, first element low). Returns `name`. UserError when a name repeats or
    // the byte count does not match type and dims.
    const std::string& initializer(const std::string& name, OnnxType type, const std::vector<int64_t>& dims, const void* bytes,
                                   size_t size);
    const std::string& initializer_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v);
    const std::string& scalar_f32(const std::string& name, float v);
    const std::string& scalar_i64(const std::string& name, int64_t v);
    const std::string& initializer_i64(const std::string& name, const std::vector<int64_t>& v);  // 1-D

    // A node of the default domain; returns its first output. Outputs are named by the caller
    // (graph-unique; the node is named after its first output).
    std::string node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                     std::vector<OnnxAttribute> attributes = {});
    void node_outputs(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                      std::vector<OnnxAttribute> attributes = {});

    void input(OnnxValueInfo v) { model_.inputs.push_back(std::move(v)); }
    void output(OnnxValueInfo v) { model_.outputs.push_back(std::move(v)); }

    int64_t external_bytes() const { return offset_; }
    // Closes the data file (renamed into place) and returns the model: IR 11, opset `opset`.
    OnnxModel finish(const std::string& graph_name, int64_t opset, const std::string& producer_version);

private:
    std::unique_ptr<AtomicFileWriter> data_;
    std::string location_;
    int64_t offset_ = 0;
    OnnxModel model_;
    std::vector<std::string> names_;  // every initializer and node output, to refuse repeats
    void claim(const std::string& name);
};

}  // namespace ql
