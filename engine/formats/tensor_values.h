// SPDX-License-Identifier: GPL-3.0-or-later
// A LibTorch tensor as plain values, for messages and reports: its shape as text and its elements
// as doubles. Neither keeps a reference to the tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace ql {

// "[rows, cols]" (engine/core/nd_array.h shape_string of its sizes).
std::string shape_text(const at::Tensor& t);

// Every element, row-major, converted to double (a tensor of any dtype, shape and strides).
std::vector<double> to_doubles(const at::Tensor& t);

}  // namespace ql
