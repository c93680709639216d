// SPDX-License-Identifier: GPL-3.0-or-later
// The block-diagonal normalized Walsh–Hadamard transform written straight from its definition in
// kernels/hadamard.h, one row, one block, one butterfly at a time: what the fast CPU and CUDA
// kernels are tested against bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace ql::kernels::reference {

// x: rows * cols floats, row-major; signs: empty or cols values. Returns the transformed rows.
std::vector<float> hadamard_rows(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t block,
                                 const std::vector<float>& signs = {});

}  // namespace ql::kernels::reference
