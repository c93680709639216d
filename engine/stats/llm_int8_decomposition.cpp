// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/stats/llm_int8_decomposition.h"

#include <vector>

#include "kernels/llm_int8.h"

namespace ql {

LlmInt8Decomposition llm_int8_decomposition(const float* x, int64_t rows, int64_t cols, double threshold) {
    LlmInt8Decomposition d;
    d.threshold = threshold;
    d.tokens = rows;
    if (rows <= 0 || cols <= 0) return d;
    std::vector<int64_t> counts(static_cast<size_t>(cols));
    kernels::llm_int8_outlier_counts(x, rows, cols, static_cast<float>(threshold), counts.data());
    int64_t total = 0;
    for (int64_t j = 0; j < cols; ++j) {
        const int64_t c = counts[static_cast<size_t>(j)];
        total += c;
        if (c == 0) continue;
        d.columns.push_back(j);
        d.column_token_share.push_back(static_cast<double>(c) / static_cast<double>(rows));
    }
    d.batch_flop_share = static_cast<double>(d.columns.size()) / static_cast<double>(cols);
    d.token_flop_share = static_cast<double>(total) / (static_cast<double>(rows) * static_cast<double>(cols));
    return d;
}

}  // namespace ql
