// SPDX-License-Identifier: GPL-3.0-or-later
// The matrix products of the models' forward: a linear layer's x · weightᵀ + bias and
// attention's per-head products.
//
// Where QuantLab is built with Debian's LibTorch, FP32 products on the CPU run on oneDNN's sgemm
// (kernels/dense_product.h): that LibTorch's OpenBLAS runs SSE3 kernels on CPUs newer than
// itself, 3-5x slower (docs/BENCHMARKS.md) — where no gradient flows through the product
// (evaluation, calibration, generation, PTQ). Training, CUDA, other dtypes and PyPI's LibTorch (its
// own fast BLAS) call LibTorch. Results differ from LibTorch's in the last bits of the sums' order
// only.
#pragma once

#include <ATen/core/Tensor.h>

namespace ql {

// What at::linear computes. x: [..., in]; weight: [out, in]; bias: [out] or undefined.
// Returns [..., out] in x's dtype.
at::Tensor linear_product(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// alpha · a[b, h] · op(m[b, h / g]) for every batch b and head h, where g = H / Hm heads share
// one of m's (grouped-query attention, as transformers' repeat_kv), and op(m) = mᵀ when
// m_transposed. a: [B, H, R, K]; m: [B, Hm, K, N], or [B, Hm, N, K] when m_transposed; H a
// multiple of Hm. Returns [B, H, R, N]. Attention's scores are head_product(q, k, true, scale),
// its output head_product(probs, v, false, 1).
at::Tensor head_product(const at::Tensor& a, const at::Tensor& m, bool m_transposed, double alpha);

// Whether FP32 products run on oneDNN in this build.
bool matrix_products_on_onednn();

}  // namespace ql
