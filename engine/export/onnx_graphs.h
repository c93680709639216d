// SPDX-License-Identifier: GPL-3.0-or-later
// The model graphs of the ONNX export (onnx_export.h), one per architecture family, written
// into an OnnxGraphWriter. Internal to engine/export.
#pragma once

#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "engine/export/export_manifest.h"
#include "engine/export/onnx_graph_writer.h"
#include "engine/jobs/job.h"

namespace ql {

class Model;
class QuantizedModel;

// Why `model` has no ONNX graph here (the architecture or a feature), or "".
std::string onnx_unsupported_model(const Model& model);

struct OnnxGraphContext {
    OnnxGraphWriter& g;
    const QuantizedModel& q;
    std::map<std::string, at::Tensor> params;  // HF name -> the model's tensor
    ExportManifest& manifest;
    JobSink& sink;
    const CancellationToken& cancel;
    const at::Tensor& param(const std::string& name) const;       // UserError when absent
    std::string float_initializer(const std::string& name) const;  // the parameter as a float32 initializer
    // The quantized weights of `modules` are on disk: give back their cached copies.
    void release(const std::vector<std::string>& modules) const;
};

// Llama-family decoders: input_ids -> logits (onnx_decoder_graph.cpp).
void emit_decoder_graph(OnnxGraphContext& ctx);
// BERT encoders: input_ids, attention_mask, token_type_ids -> last_hidden_state (onnx_encoder_graph.cpp).
void emit_encoder_graph(OnnxGraphContext& ctx);

OnnxValueInfo onnx_tensor_value(const std::string& name, OnnxType type, std::vector<int64_t> dims, std::vector<std::string> params);

}  // namespace ql
