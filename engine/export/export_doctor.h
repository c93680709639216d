// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor: checks an artifact the way its consumer loads it, before it is deployed
// (docs/EXPORT.md "Export Doctor"). Layouts: a compressed-tensors folder (vLLM), a Model
// Optimizer HF folder (vLLM / TensorRT-LLM), a plain HF folder (transformers; fake-quant
// exports), a GGUF file (llama.cpp), an ONNX model (ONNX Runtime). Each finding has a severity, the layer / tensor / field, what
// the consumer would do and the fix; the report lists every check and whether it ran. Run by
// `quantlab-cli doctor`, the GUI's Export Doctor panel, and every export before its folder is
// renamed into place (an error finding aborts the export).
#pragma once

#include <string>

#include "engine/core/doctor_report.h"

namespace ql {

// `path`: a folder, a .gguf file or a .onnx file. `display_path` names it in the findings ("" = path; exports
// check "<out>.partial" and show "<out>"). Never throws for a bad artifact (that is a finding);
// UserError only when `path` does not exist.
DoctorReport run_export_doctor(const std::string& path, const std::string& display_path = "");

// Which layout `path` holds: compressed-tensors | hf-modelopt | hf | gguf | onnx | peft | unknown.
std::string detect_artifact_layout(const std::string& path);

}  // namespace ql
