// SPDX-License-Identifier: GPL-3.0-or-later
// The same math as our fused kernels, written as composed LibTorch operators: the baseline the
// FakeQuantTorchOps/<format> benchmarks measure (what a user gets from a straightforward PyTorch
// implementation). tests/engine/torch_ops_equivalence_test.cpp checks that each one computes
// exactly what the kernel does, so the speed comparison is like for like.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace ql::bench {

// Formats with a composed version: nvfp4, mxfp4, fp8_e4m3, int4 (symmetric, group 128), nf4.
const std::vector<std::string>& torch_ops_formats();

// x: float32, contiguous, numel divisible by 128, finite. Returns the fake-quantized tensor.
at::Tensor torch_ops_fake_quant(const at::Tensor& x, const std::string& format);

}  // namespace ql::bench
