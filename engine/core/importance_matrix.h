// SPDX-License-Identifier: GPL-3.0-or-later
// An importance matrix ("imatrix"), as llama.cpp's llama-imatrix collects it
// (tools/imatrix/imatrix.cpp IMatrixCollector::collect_imatrix): for every matrix multiplication
// with a weight, per input column j the sum over token rows x of x_j^2 ("in_sum2") and the number
// of rows ("counts"). llama-quantize uses in_sum2 / count -- the mean squared activation of each
// input column -- as the importance of that column's weights (tools/quantize/quantize.cpp
// load_imatrix; shared/design/GGUF_KQUANTS.md section 6).
// Entries are named like the weights in GGUF files ("blk.0.attn_q.weight") for the architectures
// llama.cpp runs, so that files move both ways between QuantLab and llama.cpp; other models use
// "<HF module>.weight". Dense models only: one matrix per entry (llama.cpp's per-expert rows,
// n_mat > 1, are read and kept but QuantLab's models never produce them).
// Plain shared types (engine/core): the matrix, its merge (importance_matrix.cpp) and its
// statistics (engine/stats/importance_statistics.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ql {

struct ImportanceEntry {
    std::string name;              // "blk.0.attn_q.weight"
    int64_t columns = 0;           // ne0: input columns of one matrix
    std::vector<double> sum_sq;    // in_sum2: n_mat * columns sums of x_j^2
    std::vector<double> sum;       // in_sum: sums of x_j (empty when the file had none)
    std::vector<int64_t> counts;   // n_mat token counts (counts[e] rows went through matrix e)

    int64_t matrices() const { return static_cast<int64_t>(counts.size()); }
    // in_sum2 / count per column (a count of 0 gives 1, as llama-quantize does); matrix `e`.
    std::vector<float> mean_sq(int64_t e = 0) const;
};

struct ImportanceMatrix {
    std::vector<ImportanceEntry> entries;  // sorted by name
    std::vector<std::string> datasets;     // what it was computed on (imatrix.datasets)
    int64_t chunk_count = 0;               // imatrix.chunk_count: windows of chunk_size tokens seen
    int64_t chunk_size = 0;                // imatrix.chunk_size: tokens per window (0: unknown, legacy files)

    const ImportanceEntry* find(const std::string& name) const;
    void sort();
};

// Adds `b` into `a` (llama-imatrix --in-file ... --in-file: sums and counts add; datasets
// concatenate; chunk_count is recomputed from the largest count). Entries present in one only
// are kept. UserError naming the entry when column counts differ.
void merge_importance(ImportanceMatrix& a, const ImportanceMatrix& b);

// ---- Statistics (defined in engine/stats/importance_statistics.cpp) ----------------------------
// Per-tensor statistics of an importance matrix: what `llama-imatrix --show-statistics` prints
// (tools/imatrix/imatrix.cpp compute_statistics / compute_cossim), plus the kurtosis and the
// most important columns. Over the activations a_j = in_sum2_j / count (the mean squared input
// of column j; matrices with a zero count skipped), in float32 as llama.cpp computes them:
//   total = sum a_j, min, max, mean = total / n, std = sqrt(max(0, sum a_j^2 / n - mean^2)),
//   active = fraction of |a_j| > 1e-5, entropy = -sum p log2 p with p = a_j / total (bits),
//   normalized entropy = entropy / log2 n, zd = fraction of a_j with (a_j - mean) / std > 1,
//   cossim = cosine of in_sum2 with the same tensor of the previous block ("blk.N-1."), 0 when
//   there is none;
// and (QuantLab) kurtosis = Pearson m4 / m2^2 of a_j (3 for a Gaussian; 0 when m2 = 0, in
// double), top = the k largest a_j with their column index (largest first, lower index on ties).
struct ImportanceStatistics {
    std::string name;             // "blk.3.ffn_down.weight"
    int layer = -1;               // N of "blk.N.", -1 otherwise
    std::string tensor;           // "ffn_down" (the part before ".weight", as llama-imatrix groups them)
    int64_t elements = 0;         // a_j values used
    int64_t tokens = 0;           // largest count
    float total = 0, min = 0, max = 0, mean = 0, std = 0;
    float active = 0;             // fraction
    float entropy = 0, entropy_normalized = 0;  // bits; fraction of log2(n)
    float zd = 0;                 // fraction
    float cossim = 0;
    double kurtosis = 0;
    std::vector<std::pair<int64_t, float>> top;  // (column, a_j), largest first
    std::vector<float> values;    // every a_j (for plots)
};

// Every entry's statistics in the matrix's (name) order; `top_k` columns each.
std::vector<ImportanceStatistics> importance_statistics(const ImportanceMatrix& m, int top_k = 8);

}  // namespace ql
