// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/hadamard.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

// The first three butterfly stages (h = 1, 2, 4) of an 8-element group, written out so that the
// compiler keeps them in registers; the same additions in the same order as the generic loop.
inline void butterflies_of_eight(float* v) {
    for (int i = 0; i < 8; i += 2) {
        const float a = v[i], b = v[i + 1];
        v[i] = a + b;
        v[i + 1] = a - b;
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
            const float a = v[i + j], b = v[i + j + 2];
            v[i + j] = a + b;
            v[i + j + 2] = a - b;
        }
    for (int j = 0; j < 4; ++j) {
        const float a = v[j], b = v[j + 4];
        v[j] = a + b;
        v[j + 4] = a - b;
    }
}

// One block in place: every stage over the whole block, then the scale.
void transform_block(float* v, int64_t block, float scale) {
    int64_t h = 1;
    if (block >= 8) {
        for (int64_t g = 0; g < block; g += 8) butterflies_of_eight(v + g);
        h = 8;
    }
    for (; h < block; h *= 2) {
        for (int64_t i0 = 0; i0 < block; i0 += 2 * h) {
            float* a = v + i0;
            float* b = v + i0 + h;
            // Contiguous and independent: vectorises for h >= 8.
            for (int64_t j = 0; j < h; ++j) {
                const float p = a[j], q = b[j];
                a[j] = p + q;
                b[j] = p - q;
            }
        }
    }
    for (int64_t i = 0; i < block; ++i) v[i] *= scale;
}

}  // namespace

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

int64_t largest_power_of_two_divisor(int64_t n) {
    if (n <= 0) throw std::invalid_argument("largest_power_of_two_divisor: n must be positive, got " + std::to_string(n));
    return n & (-n);
}

int64_t default_hadamard_block(int64_t n) { return is_power_of_two(n) ? n : largest_power_of_two_divisor(n); }

float hadamard_scale(int64_t block) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(block))); }

void check_hadamard_layout(const HadamardLayout& L) {
    if (L.rows < 0 || L.cols < 0) throw std::invalid_argument("hadamard: negative shape");
    if (L.rows == 0 || L.cols == 0) return;
    if (!is_power_of_two(L.block))
        throw std::invalid_argument("hadamard: block " + std::to_string(L.block) + " is not a power of two");
    if (L.cols % L.block != 0)
        throw std::invalid_argument("hadamard: block " + std::to_string(L.block) + " does not divide the row length " +
                                    std::to_string(L.cols));
}

void hadamard_rows(const float* x, float* y, const HadamardLayout& L, const float* signs) {
    check_hadamard_layout(L);
    if (L.rows == 0 || L.cols == 0) return;
    const float scale = hadamard_scale(L.block);
    const int64_t cols = L.cols, block = L.block;
    // Rows are independent; a thread takes whole rows (at least ~64k floats each to be worth it).
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
    parallel_ranges(L.rows, grain, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xr = x + r * cols;
            float* yr = y + r * cols;
            if (signs) {
                for (int64_t i = 0; i < cols; ++i) yr[i] = xr[i] * signs[i];
            } else if (yr != xr) {
                std::memcpy(yr, xr, static_cast<size_t>(cols) * sizeof(float));
            }
            for (int64_t b = 0; b < cols; b += block) transform_block(yr + b, block, scale);
        }
    });
}

}  // namespace ql::kernels
