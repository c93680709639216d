// SPDX-License-Identifier: GPL-3.0-or-later
// The normalized fast Walsh–Hadamard transform of rows, block-diagonal for lengths that are not
// powers of two: the rotations of QuaRot / SpinQuant and Model Optimizer's rotate-before-quantize
// (modelopt/torch/quantization/nn/functional.py normalized_hadamard_transform, which calls
// Dao-AILab's fast_hadamard_transform with scale = block^-1/2 on blocks of the last dimension).
//
// Definition. A row of `cols` floats is cut into cols / block blocks of `block` elements (block a
// power of two dividing cols); every block v becomes H v / sqrt(block), H the Sylvester Hadamard
// matrix H[i][j] = (-1)^popcount(i & j). The transform is orthogonal and its own inverse.
// With `signs` (cols floats, each +1 or -1) the row is first multiplied by them elementwise, so the
// row becomes x diag(s) H_blockdiag: QuaRot's randomized Hadamard. Its inverse is H then diag(s).
//
// Float operations, in this order on every backend (so that CPU, CUDA and the scalar reference
// agree bit for bit): v = x * s (exact), then for h = 1, 2, 4, ..., block / 2 the butterflies
// (v[i], v[i + h]) -> (v[i] + v[i + h], v[i] - v[i + h]) for every i with (i & h) == 0, then
// y = v * scale with scale = (float)(1 / sqrt((double)block)). NaN and Inf propagate as IEEE
// arithmetic gives (a NaN spreads over its block).
#pragma once

#include <cstdint>

namespace ql::kernels {

struct HadamardLayout {
    int64_t rows = 0;
    int64_t cols = 0;   // row length; a multiple of block
    int64_t block = 0;  // a power of two, 1 <= block <= cols
};

bool is_power_of_two(int64_t n);
// The largest power of two that divides n (n > 0): Model Optimizer's _largest_pow2_divisor.
int64_t largest_power_of_two_divisor(int64_t n);
// Model Optimizer's default block for a row of n: n itself when it is a power of two, else the
// largest power of two dividing it.
int64_t default_hadamard_block(int64_t n);
// The scale every block is multiplied by: (float)(1 / sqrt(block)).
float hadamard_scale(int64_t block);

// Throws std::invalid_argument for a layout the definition does not cover (negative sizes, block
// not a power of two or not dividing cols).
void check_hadamard_layout(const HadamardLayout& L);

// y = transform(x) for rows * cols floats, row-major; y may equal x. signs: cols floats or null.
// Threaded over rows (kernels/parallel.h).
void hadamard_rows(const float* x, float* y, const HadamardLayout& L, const float* signs = nullptr);

}  // namespace ql::kernels
