// SPDX-License-Identifier: GPL-3.0-or-later
// The block-diagonal normalized Hadamard rotation of LibTorch tensors along their last dimension,
// through the fast Walsh–Hadamard kernels (kernels/hadamard.h: CPU, and CUDA for CUDA tensors).
// Used by the rotations (engine/quant/rotation.h) and the KV cache's Q/K rotation.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ql {

// x -> x diag(signs) H_b (blocks of `block` along the last dimension, H_b the Sylvester matrix
// divided by sqrt(block)); `signs` [n] float32 of +-1, or undefined for none (Model Optimizer's
// rotate-before-quantize has none; QuaRot's randomized Hadamard has them).
struct HadamardRotation {
    int64_t block = 0;
    at::Tensor signs;

    bool active() const { return block > 0; }
};

// y = x diag(s) H_b. x: any float dtype, any shape [..., n] with n % block == 0; y float32 of x's
// shape and device. Bit for bit the kernel's result. When autograd records and x requires grad,
// the gradient is that of the same linear map (dL/dx = dL/dy H_b diag(s)), taken through a dense
// [block, block] product that adds exactly +0 to the forward value. UserError for a block that
// does not fit the last dimension.
at::Tensor hadamard_transform(const at::Tensor& x, const HadamardRotation& rotation);

// The inverse: x -> x H_b diag(s) (H_b is symmetric and its own inverse). Not differentiable
// (weight folding and exports).
at::Tensor inverse_hadamard_transform(const at::Tensor& x, const HadamardRotation& rotation);

// The [block, block] float32 matrix H_b (CPU): for tests and the gradient.
at::Tensor hadamard_matrix(int64_t block);

// n random signs (+-1, float32, CPU) from `seed` (a std::mt19937_64 stream: deterministic
// across platforms).
at::Tensor random_signs(int64_t n, uint64_t seed);

}  // namespace ql
