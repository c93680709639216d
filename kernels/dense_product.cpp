// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/dense_product.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ql::kernels {

void matrix_product_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, Stored a_stored,
                        const float* b, int64_t ldb, Stored b_stored, float beta, float* c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {  // an empty sum; oneDNN rejects k = 0
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    const dnnl_status_t status =
        dnnl_sgemm(a_stored == Stored::Transposed ? 'T' : 'N', b_stored == Stored::Transposed ? 'T' : 'N', m, n, k,
                   alpha, a, lda, b, ldb, beta, c, ldc);
    if (status != dnnl_success)
        throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(status)) + ") on [" +
                                 std::to_string(m) + " x " + std::to_string(k) + "] x [" + std::to_string(k) + " x " +
                                 std::to_string(n) + "]");
}

void dense_product_f32(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, const float* bias,
                       float* y) {
    // The bias goes in first and the product is added to it (beta = 1), as LibTorch's addmm does.
    if (bias)
        for (int64_t r = 0; r < rows; ++r) std::copy_n(bias, out, y + r * out);
    matrix_product_f32(rows, out, in, 1.0f, x, in, Stored::AsIs, w, in, Stored::Transposed, bias ? 1.0f : 0.0f, y, out);
}

}  // namespace ql::kernels
