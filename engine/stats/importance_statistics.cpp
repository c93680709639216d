// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/importance_matrix.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <regex>
#include <sstream>

namespace ql {
namespace {

// process_tensor_name: the layer after "blk", the part before "weight".
void split_name(const std::string& input, int& layer, std::string& tensor) {
    std::vector<std::string> parts;
    std::istringstream in(input);
    for (std::string item; std::getline(in, item, '.');) parts.push_back(item);
    layer = -1;
    for (size_t i = 0; i + 1 < parts.size(); ++i)
        if (parts[i] == "blk") {
            try {
                layer = std::stoi(parts[i + 1]);
            } catch (const std::exception&) {
                layer = -1;
            }
            break;
        }
    tensor.clear();
    for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i] == "weight") {
            tensor = parts[i - 1];
            break;
        }
    if (tensor.empty()) tensor = input;
}

}  // namespace

std::vector<ImportanceStatistics> importance_statistics(const ImportanceMatrix& m, int top_k) {
    std::vector<ImportanceStatistics> out;
    for (const ImportanceEntry& e : m.entries) {
        ImportanceStatistics s;
        s.name = e.name;
        split_name(e.name, s.layer, s.tensor);
        std::vector<float>& a = s.values;
        for (int64_t k = 0; k < e.matrices(); ++k) {
            const int64_t c = e.counts[static_cast<size_t>(k)];
            s.tokens = std::max(s.tokens, c);
            if (c == 0) continue;
            for (int64_t j = 0; j < e.columns; ++j)
                a.push_back(static_cast<float>(e.sum_sq[static_cast<size_t>(k * e.columns + j)]) / static_cast<float>(c));
        }
        s.elements = static_cast<int64_t>(a.size());
        if (!a.empty()) {
            // std::accumulate / inner_product in float, as llama-imatrix.
            s.total = std::accumulate(a.begin(), a.end(), 0.0f);
            s.max = *std::max_element(a.begin(), a.end());
            s.min = *std::min_element(a.begin(), a.end());
            const float n = static_cast<float>(a.size());
            s.mean = s.total / n;
            const float sq = std::inner_product(a.begin(), a.end(), a.begin(), 0.0f);
            s.std = std::sqrt(std::max(0.0f, sq / n - s.mean * s.mean));
            const auto inactive = std::count_if(a.begin(), a.end(), [](float v) { return std::fabs(v) <= 1e-5f; });
            s.active = 1 - static_cast<float>(inactive) / n;
            if (s.total > 0)
                for (float v : a)
                    if (const float p = v / s.total; p > 0) s.entropy -= p * std::log2(p);
            s.entropy_normalized = a.size() > 1 ? s.entropy / std::log2(n) : 0.0f;
            if (s.std > 0) {
                int64_t z = 0;
                for (float v : a) z += (v - s.mean) / s.std > 1;
                s.zd = static_cast<float>(z) / n;
            }
            double mean = 0;
            for (float v : a) mean += v;
            mean /= static_cast<double>(a.size());
            double m2 = 0, m4 = 0;
            for (float v : a) {
                const double d = v - mean;
                m2 += d * d;
                m4 += d * d * d * d;
            }
            m2 /= static_cast<double>(a.size());
            m4 /= static_cast<double>(a.size());
            s.kurtosis = m2 > 0 ? m4 / (m2 * m2) : 0;
            std::vector<int64_t> order(a.size());
            std::iota(order.begin(), order.end(), 0);
            const size_t k = std::min(order.size(), static_cast<size_t>(std::max(0, top_k)));
            std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), [&](int64_t x, int64_t y) {
                return a[static_cast<size_t>(x)] > a[static_cast<size_t>(y)] ||
                       (a[static_cast<size_t>(x)] == a[static_cast<size_t>(y)] && x < y);
            });
            for (size_t i = 0; i < k; ++i) s.top.emplace_back(order[i] % std::max<int64_t>(1, e.columns), a[static_cast<size_t>(order[i])]);
        }
        out.push_back(std::move(s));
    }
    // compute_cossim: against "blk.(N-1)." of the same tensor, over the raw in_sum2 values.
    static const std::regex block(R"(blk\.(\d+)\.)");
    for (ImportanceStatistics& s : out) {
        std::smatch match;
        if (!std::regex_search(s.name, match, block)) continue;
        std::string prev = s.name;
        prev.replace(static_cast<size_t>(match.position(1)), static_cast<size_t>(match.length(1)), std::to_string(std::stoi(match[1]) - 1));
        const ImportanceEntry* p = m.find(prev);
        const ImportanceEntry* c = m.find(s.name);
        if (!p || !c || p->sum_sq.size() != c->sum_sq.size()) continue;
        float dot = 0, cm = 0, pm = 0;
        for (size_t i = 0; i < c->sum_sq.size(); ++i) {
            const float x = static_cast<float>(c->sum_sq[i]), y = static_cast<float>(p->sum_sq[i]);
            dot += x * y;
            cm += x * x;
            pm += y * y;
        }
        s.cossim = dot / (std::sqrt(cm) * std::sqrt(pm));
    }
    return out;
}

}  // namespace ql
