// SPDX-License-Identifier: GPL-3.0-or-later
// Fake quantization of LibTorch tensors through the fused kernels. Inputs of any float dtype and
// any strides are accepted (made contiguous float32 first, FORMATS.md "Shapes"); the result is
// float32 of the same shape. Empty tensors pass through.
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/core/quant_options.h"
#include "engine/formats/format_codec.h"

namespace ql {

at::Tensor fake_quantize(const at::Tensor& x, const QuantSpec& spec);
at::Tensor fake_quantize(const at::Tensor& x, const QuantOptions& options);

// Writes into `out` (float32, contiguous, same shape, reused across calls so that repeated
// quantization does not page-fault fresh buffers: PERF.md lesson 3). `out` may alias `x`.
void fake_quantize_into(const at::Tensor& x, at::Tensor& out, const QuantSpec& spec);

std::vector<int64_t> shape_of(const at::Tensor& t);

}  // namespace ql
