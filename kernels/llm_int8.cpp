// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/llm_int8.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

// bitsandbytes multiplies by the Python float 7.874015718698502e-3 (1/127), applied in float32.
constexpr float kInv127 = static_cast<float>(7.874015718698502e-3);

bool is_outlier(float a, float threshold) { return threshold > 0.0f && !std::isnan(a) && std::fabs(a) >= threshold; }

// The row's absmax over its finite, non-outlier FP16 values (elements of outlier columns below
// the threshold count, as bitsandbytes zeroes only the outlier elements before its max).
float row_absmax(const float* x, int64_t cols, float threshold) {
    float r = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        const float a = fp16_round_trip(x[j]);
        if (!std::isfinite(a) || is_outlier(a, threshold)) continue;
        r = std::fabs(a) > r ? std::fabs(a) : r;
    }
    return r;
}

template <class Row>
void for_rows(int64_t rows, int64_t cols, const Row& row) {
    parallel_ranges(rows, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(cols, 1)), 1,
                    [&](int64_t r0, int64_t r1) {
                        for (int64_t i = r0; i < r1; ++i) row(i);
                    });
}

// 127 / r as bitsandbytes computes it: `127.0 / row_stats` is torch's __rtruediv__, the
// reciprocal times 127 (two float32 roundings, which move some products off a .5 tie). Inf when
// r == 0: code_of gives 0 there.
float row_factor(float r) { return (1.0f / r) * 127.0f; }

// The code of one FP16 value a with row factor k = 127 / r (a NaN gets 0: it has no code).
float code_of(float a, float r, float k) {
    float q = r == 0.0f || std::isnan(a) ? 0.0f : std::nearbyint(a * k);
    return q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
}

}  // namespace

void llm_int8_outlier_counts(const float* x, int64_t rows, int64_t cols, float threshold, int64_t* counts) {
    for (int64_t j = 0; j < cols; ++j) counts[j] = 0;
    if (!(threshold > 0.0f)) return;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) counts[j] += is_outlier(fp16_round_trip(x[i * cols + j]), threshold) ? 1 : 0;
}

int64_t llm_int8_outlier_columns(const float* x, int64_t rows, int64_t cols, float threshold, uint8_t* out) {
    std::vector<int64_t> counts(static_cast<size_t>(cols));
    llm_int8_outlier_counts(x, rows, cols, threshold, counts.data());
    int64_t n = 0;
    for (int64_t j = 0; j < cols; ++j) {
        out[j] = counts[static_cast<size_t>(j)] > 0 ? 1 : 0;
        n += out[j];
    }
    return n;
}

void llm_int8_encode(const float* x, int64_t rows, int64_t cols, float threshold, int8_t* codes, float* absmax,
                     uint8_t* outliers) {
    llm_int8_outlier_columns(x, rows, cols, threshold, outliers);
    for_rows(rows, cols, [&](int64_t i) {
        const float* xr = x + i * cols;
        const float r = row_absmax(xr, cols, threshold);
        const float k = row_factor(r);
        absmax[i] = r;
        for (int64_t j = 0; j < cols; ++j)
            codes[i * cols + j] = outliers[j] ? int8_t{0} : static_cast<int8_t>(code_of(fp16_round_trip(xr[j]), r, k));
    });
}

void llm_int8_decode(const int8_t* codes, const float* absmax, int64_t rows, int64_t cols, float* y) {
    for_rows(rows, cols, [&](int64_t i) {
        for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = (static_cast<float>(codes[i * cols + j]) * absmax[i]) * kInv127;
    });
}

void llm_int8_fake_quant(const float* x, float* y, int64_t rows, int64_t cols, float threshold) {
    std::vector<uint8_t> outliers(static_cast<size_t>(cols));
    llm_int8_outlier_columns(x, rows, cols, threshold, outliers.data());
    for_rows(rows, cols, [&](int64_t i) {
        const float* xr = x + i * cols;
        float* yr = y + i * cols;
        const float r = row_absmax(xr, cols, threshold);
        const float k = row_factor(r);
        for (int64_t j = 0; j < cols; ++j) {
            const float a = fp16_round_trip(xr[j]);
            // Outlier columns and NaN keep the input (NaN stays NaN).
            // Through an int8 as bitsandbytes stores it, so a code of -0 dequantizes to +0.
            const float q = static_cast<float>(static_cast<int8_t>(code_of(a, r, k)));
            yr[j] = outliers[j] || std::isnan(a) ? xr[j] : (q * r) * kInv127;
        }
    });
}

}  // namespace ql::kernels
