// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/reference/reference_hadamard.h"

#include <cmath>
#include <stdexcept>

namespace ql::kernels::reference {

std::vector<float> hadamard_rows(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t block,
                                 const std::vector<float>& signs) {
    if (rows < 0 || cols < 0 || static_cast<int64_t>(x.size()) != rows * cols)
        throw std::invalid_argument("reference hadamard: x does not hold rows * cols values");
    if (block <= 0 || (block & (block - 1)) != 0 || (cols > 0 && cols % block != 0))
        throw std::invalid_argument("reference hadamard: block must be a power of two dividing cols");
    if (!signs.empty() && static_cast<int64_t>(signs.size()) != cols)
        throw std::invalid_argument("reference hadamard: signs must hold cols values");
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(block)));
    std::vector<float> y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            const float v = x[static_cast<size_t>(r * cols + c)];
            y[static_cast<size_t>(r * cols + c)] = signs.empty() ? v : v * signs[static_cast<size_t>(c)];
        }
        for (int64_t b0 = 0; b0 < cols; b0 += block) {
            float* v = y.data() + r * cols + b0;
            for (int64_t h = 1; h < block; h *= 2)
                for (int64_t i = 0; i < block; ++i) {
                    if ((i & h) != 0) continue;
                    const float a = v[i], b = v[i + h];
                    v[i] = a + b;
                    v[i + h] = a - b;
                }
            for (int64_t i = 0; i < block; ++i) v[i] = v[i] * scale;
        }
    }
    return y;
}

}  // namespace ql::kernels::reference
