// SPDX-License-Identifier: GPL-3.0-or-later
// ggml sorts every point by distance (qsort of (d2, index) pairs) and keeps the first
// `neighbour_shells` distinct distances. Distances between positions 1, 3, 5, ... are small
// integers, so the same lists come from one pass that finds those distances and one pass per
// distance that collects the points in index order: no sort, and only for the vectors u the
// quantizers can form (ggml fills all of kmap).
#include "kernels/gguf_iquant_lattice.h"

#include <climits>
#include <memory>
#include <mutex>

#include "kernels/parallel.h"

namespace ql::kernels::iquant {
namespace {

constexpr int kMaxShells = 3;

struct Builder {
    const LatticeTable& t;
    std::vector<int32_t> positions;  // coordinate c of point j: 2 l + 1 at [c * size + j] (vectorises)

    Builder(const LatticeTable& table, const int8_t* point_levels) : t(table), positions(static_cast<size_t>(t.dims * t.size)) {
        for (int j = 0; j < t.size; ++j)
            for (int c = 0; c < t.dims; ++c) positions[static_cast<size_t>(c * t.size + j)] = 2 * point_levels[j * t.dims + c] + 1;
    }

    // The smallest `neighbour_shells` distinct distances from u's positions (a pass of minima
    // each); returns how many points lie at them.
    int shells(int u, int* dist, int* nd, std::vector<int>& d2) const {
        int pos[8];
        const int mask = (1 << t.bits) - 1;
        for (int c = 0; c < t.dims; ++c) pos[c] = 2 * ((u >> t.bits * c) & mask) + 1;
        int* d = d2.data();
        for (int j = 0; j < t.size; ++j) d[j] = 0;
        for (int c = 0; c < t.dims; ++c) {
            const int32_t* p = positions.data() + static_cast<size_t>(c) * t.size;
            for (int j = 0; j < t.size; ++j) d[j] += (p[j] - pos[c]) * (p[j] - pos[c]);
        }
        *nd = 0;
        int last = -1;
        for (int k = 0; k < t.neighbour_shells; ++k) {
            int m = INT_MAX;
            for (int j = 0; j < t.size; ++j) m = d[j] > last && d[j] < m ? d[j] : m;
            if (m == INT_MAX) break;
            dist[(*nd)++] = last = m;
        }
        int n = 0;
        for (int j = 0; j < t.size; ++j) n += d[j] <= last;
        return n;
    }
};

LatticeSearch build(Lattice which) {
    const LatticeTable& t = lattice_table(which);
    LatticeSearch s;
    s.table = &t;
    const int mask = (1 << t.bits) - 1;
    s.point_levels = point_levels(which);
    const int map_size = 1 << (t.bits * t.dims);
    s.map.assign(static_cast<size_t>(map_size), INT32_MIN);
    // The vectors u the quantizers form: every coordinate below levels_count.
    std::vector<int> formed;
    for (int u = 0; u < map_size; ++u) {
        bool ok = true;
        for (int c = 0; c < t.dims; ++c) ok = ok && ((u >> t.bits * c) & mask) < t.levels_count;
        if (ok) {
            s.map[static_cast<size_t>(u)] = -1;
            formed.push_back(u);
        }
    }
    for (int k = 0; k < t.size; ++k) s.map[t.points[k]] = k;
    std::vector<int> off_grid;
    for (int u : formed)
        if (s.map[static_cast<size_t>(u)] < 0) off_grid.push_back(u);

    const Builder b(t, s.point_levels);
    const int64_t n_lists = static_cast<int64_t>(off_grid.size());
    std::vector<int> counts(off_grid.size());
    parallel_ranges(n_lists, 64, 1, [&](int64_t i0, int64_t i1) {
        std::vector<int> d2(static_cast<size_t>(t.size));
        int dist[kMaxShells], nd;
        for (int64_t i = i0; i < i1; ++i) counts[static_cast<size_t>(i)] = b.shells(off_grid[static_cast<size_t>(i)], dist, &nd, d2);
    });
    s.lists.resize(off_grid.size());
    uint32_t first = 0, packed = 0;
    for (size_t i = 0; i < off_grid.size(); ++i) {
        NeighbourList& l = s.lists[i];
        l.first = first;
        l.count = static_cast<uint32_t>(counts[i]);
        l.padded = (l.count + 7) / 8 * 8;
        l.packed = packed;
        first += l.count;
        packed += l.padded;
        s.map[static_cast<size_t>(off_grid[i])] = -static_cast<int32_t>(i + 1);
    }
    s.indices.resize(first);
    s.packed.resize(packed);
    parallel_ranges(n_lists, 64, 1, [&](int64_t i0, int64_t i1) {
        std::vector<int> d2(static_cast<size_t>(t.size));
        int dist[kMaxShells], nd;
        for (int64_t i = i0; i < i1; ++i) {
            b.shells(off_grid[static_cast<size_t>(i)], dist, &nd, d2);
            const NeighbourList& l = s.lists[static_cast<size_t>(i)];
            uint32_t m = 0;
            for (int k = 0; k < nd; ++k)
                for (int j = 0; j < t.size; ++j)
                    if (d2[static_cast<size_t>(j)] == dist[k]) s.indices[l.first + m++] = static_cast<uint16_t>(j);
            for (uint32_t j = 0; j < l.padded; ++j) s.packed[l.packed + j] = t.points[s.indices[l.first + (j < l.count ? j : 0)]];
        }
    });
    return s;
}

}  // namespace

const LatticeSearch& lattice_search(Lattice l) {
    static std::once_flag once[6];
    static std::unique_ptr<LatticeSearch> built[6];
    const int k = static_cast<int>(l);
    std::call_once(once[k], [&] { built[k] = std::make_unique<LatticeSearch>(build(l)); });
    return *built[k];
}

}  // namespace ql::kernels::iquant
