// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/importance_matrix.h"

#include <algorithm>

#include "engine/core/errors.h"

namespace ql {

std::vector<float> ImportanceEntry::mean_sq(int64_t e) const {
    std::vector<float> out(static_cast<size_t>(columns));
    const int64_t c = e < matrices() ? counts[static_cast<size_t>(e)] : 0;
    for (int64_t j = 0; j < columns; ++j) {
        // llama-quantize divides the float32 sums by a float32 count.
        const float s = static_cast<float>(sum_sq[static_cast<size_t>(e * columns + j)]);
        out[static_cast<size_t>(j)] = c > 0 ? s / static_cast<float>(c) : 1.0f;
    }
    return out;
}

const ImportanceEntry* ImportanceMatrix::find(const std::string& name) const {
    const auto it = std::lower_bound(entries.begin(), entries.end(), name,
                                     [](const ImportanceEntry& e, const std::string& n) { return e.name < n; });
    return it != entries.end() && it->name == name ? &*it : nullptr;
}

void ImportanceMatrix::sort() {
    std::sort(entries.begin(), entries.end(), [](const ImportanceEntry& a, const ImportanceEntry& b) { return a.name < b.name; });
}

namespace {

// A legacy (.dat) matrix holds per-chunk means (chunk_size 0); llama-imatrix brings it to raw
// sums by multiplying by its own chunk size when it merges it with others (load_imatrix).
ImportanceMatrix raw_form(const ImportanceMatrix& m, int64_t chunk_size) {
    ImportanceMatrix r = m;
    if (m.chunk_size != 0 || chunk_size <= 0) return r;
    for (ImportanceEntry& e : r.entries) {
        for (double& v : e.sum_sq) v *= static_cast<double>(chunk_size);
        for (double& v : e.sum) v *= static_cast<double>(chunk_size);
        for (int64_t& c : e.counts) c *= chunk_size;
    }
    r.chunk_size = chunk_size;
    return r;
}

}  // namespace

void merge_importance(ImportanceMatrix& a, const ImportanceMatrix& b_in) {
    const int64_t chunk = a.chunk_size > 0 ? a.chunk_size : b_in.chunk_size;
    a = raw_form(a, chunk);
    const ImportanceMatrix b = raw_form(b_in, chunk);
    for (const ImportanceEntry& eb : b.entries) {
        auto it = std::find_if(a.entries.begin(), a.entries.end(), [&](const ImportanceEntry& e) { return e.name == eb.name; });
        if (it == a.entries.end()) {
            a.entries.push_back(eb);
            continue;
        }
        ImportanceEntry& ea = *it;
        if (ea.columns != eb.columns || ea.sum_sq.size() != eb.sum_sq.size())
            throw UserError("imatrix merge: entry '" + eb.name + "' has " + std::to_string(eb.sum_sq.size()) + " values in one file and " +
                            std::to_string(ea.sum_sq.size()) + " in the other");
        // One count broadcast over experts when an older file had a single count (load_imatrix).
        if (ea.counts.size() == 1 && eb.counts.size() > 1) ea.counts.resize(eb.counts.size(), ea.counts[0]);
        std::vector<int64_t> cb = eb.counts;
        if (cb.size() == 1 && ea.counts.size() > 1) cb.resize(ea.counts.size(), cb[0]);
        if (cb.size() != ea.counts.size())
            throw UserError("imatrix merge: entry '" + eb.name + "' has " + std::to_string(cb.size()) + " counts in one file and " +
                            std::to_string(ea.counts.size()) + " in the other");
        for (size_t k = 0; k < ea.sum_sq.size(); ++k) ea.sum_sq[k] += eb.sum_sq[k];
        if (ea.sum.size() == eb.sum.size())
            for (size_t k = 0; k < ea.sum.size(); ++k) ea.sum[k] += eb.sum[k];
        else
            ea.sum.clear();  // one of them lacks in_sum: no sum is the honest merge
        for (size_t k = 0; k < ea.counts.size(); ++k) ea.counts[k] += cb[k];
    }
    a.datasets.insert(a.datasets.end(), b.datasets.begin(), b.datasets.end());
    int64_t max_count = 0;
    for (const ImportanceEntry& e : a.entries)
        for (int64_t c : e.counts) max_count = std::max(max_count, c);
    a.chunk_count = a.chunk_size > 0 ? max_count / a.chunk_size : a.chunk_count + b.chunk_count;
    a.sort();
}

}  // namespace ql
