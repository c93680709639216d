// SPDX-License-Identifier: GPL-3.0-or-later
// Which of a model's parameters a QAT / QAD run trains (`train qat|qad --train-only`): a partial
// fine-tune that leaves the rest frozen at their PTQ values, e.g. only the MLPs, only attention, or
// only the last blocks. Frozen quantized layers keep their cached quantized weights (no
// fake-quantization in their forward) and get no gradients or optimizer state.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace ql {

class Model;

// The parameters (name, tensor; the tensors share storage with the model) whose name, or whose
// module's name (the name without its last component, e.g. "model.layers.3.mlp.up_proj"), matches
// one of `patterns` (glob: '*' any run, '?' one character), in the model's parameter order.
// Throws UserError when `patterns` is empty or a pattern matches nothing (naming the pattern and
// an example parameter name). `source` names the model in the message.
std::vector<std::pair<std::string, at::Tensor>> select_trained_parameters(const Model& model,
                                                                           const std::vector<std::string>& patterns,
                                                                           const std::string& source);

}  // namespace ql
