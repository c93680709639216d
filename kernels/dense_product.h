// SPDX-License-Identifier: GPL-3.0-or-later
// FP32 matrix products on row-major buffers, computed by oneDNN's sgemm (Debian's libdnnl, the
// library Debian's LibTorch already loads).
//
// Why not LibTorch's own matmul: Debian's LibTorch multiplies through OpenBLAS 0.3.21, which picks
// its kernels by CPU model and runs the SSE3 (Prescott) ones on processors it does not know
// (Sapphire / Emerald Rapids among them): 31 GFLOP/s on a core where oneDNN, which picks by CPU
// features, reaches 146 (docs/BENCHMARKS.md). The sums are the same products in another order:
// results differ from OpenBLAS's in the last bits (a relative 1e-6), never more.
#pragma once

#include <cstdint>

namespace ql::kernels {

// How a matrix operand is stored: as the product uses it, or transposed.
enum class Stored { AsIs, Transposed };

// c[i, j] = alpha · Σ_l a(i, l) · b(l, j) + beta · c[i, j] for i < m, j < n, l < k, where
// a(i, l) = a[i, l] (a is [m, k]) or, Transposed, a[l, i] (a is [k, m]), and b(l, j) = b[l, j]
// (b is [k, n]) or, Transposed, b[j, l] (b is [n, k], a linear layer's weight). lda, ldb: the
// stored rows' strides; c: [m, n] with row stride ldc, not overlapping a or b. Strides count
// floats. Threads: the OpenMP pool's (LibTorch's at::set_num_threads sets it); one thread inside
// a parallel region. Throws std::runtime_error when oneDNN reports an error.
void matrix_product_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, Stored a_stored,
                        const float* b, int64_t ldb, Stored b_stored, float beta, float* c, int64_t ldc);

// y[r, o] = bias[o] + Σ_i x[r, i] · w[o, i]: a linear layer's product. x: [rows, in], w: [out,
// in], bias: [out] or null, y: [rows, out]; all dense.
void dense_product_f32(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, const float* bias,
                       float* y);

}  // namespace ql::kernels
