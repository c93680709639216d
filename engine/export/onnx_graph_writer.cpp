// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/onnx_graph_writer.h"

#include <algorithm>
#include <cstring>

#include "engine/core/errors.h"

namespace ql {

OnnxGraphWriter::OnnxGraphWriter(const std::string& data_path, std::string data_location)
    : data_(std::make_unique<AtomicFileWriter>(data_path)), location_(std::move(data_location)) {}

void OnnxGraphWriter::claim(const std::string& name) {
    if (name.empty()) throw std::logic_error("ONNX export: an empty value name");
    if (std::find(names_.begin(), names_.end(), name) != names_.end())
        throw std::logic_error("ONNX export: the value name " + name + " is used twice");
    names_.push_back(name);
}

const std::string& OnnxGraphWriter::initializer(const std::string& name, OnnxType type, const std::vector<int64_t>& dims,
                                                const void* bytes, size_t size) {
    claim(name);
    OnnxTensor t;
    t.name = name;
    t.type = static_cast<int32_t>(type);
    t.dims = dims;
    if (onnx_raw_bytes(t.type, t.numel()) != static_cast<int64_t>(size))
        throw std::logic_error("ONNX export: initializer " + name + " holds " + std::to_string(size) + " bytes, its type and dims need " +
                               std::to_string(onnx_raw_bytes(t.type, t.numel())));
    if (size < kInlineBytes) {
        t.raw.assign(static_cast<const char*>(bytes), size);
    } else {
        const int64_t aligned = (offset_ + kAlignment - 1) / kAlignment * kAlignment;
        if (aligned > offset_) {
            const std::vector<char> pad(static_cast<size_t>(aligned - offset_), 0);
            data_->write(pad.data(), pad.size());
        }
        data_->write(bytes, size);
        t.external = true;
        t.location = location_;
        t.offset = aligned;
        t.length = static_cast<int64_t>(size);
        offset_ = aligned + static_cast<int64_t>(size);
    }
    model_.initializers.push_back(std::move(t));
    return model_.initializers.back().name;
}

const std::string& OnnxGraphWriter::initializer_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    return initializer(name, OnnxType::Float, dims, v.data(), v.size() * sizeof(float));
}

const std::string& OnnxGraphWriter::scalar_f32(const std::string& name, float v) {
    return initializer(name, OnnxType::Float, {}, &v, sizeof v);
}

const std::string& OnnxGraphWriter::scalar_i64(const std::string& name, int64_t v) {
    return initializer(name, OnnxType::Int64, {}, &v, sizeof v);
}

const std::string& OnnxGraphWriter::initializer_i64(const std::string& name, const std::vector<int64_t>& v) {
    return initializer(name, OnnxType::Int64, {static_cast<int64_t>(v.size())}, v.data(), v.size() * sizeof(int64_t));
}

std::string OnnxGraphWriter::node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                                  std::vector<OnnxAttribute> attributes) {
    node_outputs(op, inputs, {output}, std::move(attributes));
    return output;
}

void OnnxGraphWriter::node_outputs(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                   std::vector<OnnxAttribute> attributes) {
    for (const std::string& o : outputs) claim(o);
    OnnxNode n;
    n.op_type = op;
    n.name = outputs.at(0) + "/" + op;
    n.inputs = inputs;
    n.outputs = outputs;
    n.attributes = std::move(attributes);
    model_.nodes.push_back(std::move(n));
}

OnnxModel OnnxGraphWriter::finish(const std::string& graph_name, int64_t opset, const std::string& producer_version) {
    data_->commit();
    model_.ir_version = 11;  // ONNX 1.18: opset 23
    model_.producer_name = "quantlab";
    model_.producer_version = producer_version;
    model_.opsets = {{"", opset}};
    model_.graph_name = graph_name;
    return std::move(model_);
}

}  // namespace ql
