// SPDX-License-Identifier: GPL-3.0-or-later
// Transcribed line by line from ggml-quants.c (llama-cpp-python 0.3.36's llama.cpp); the names
// are ggml's. Compiled with -ffp-contract=off, so every float op rounds on its own, as in
// ggml-base (which gets no FMA flags).
//
// Where ggml aborts (GGML_ASSERT / GGML_ABORT: a neighbour search in which no candidate has a
// distance below FLT_MAX, a point off the grid, a negative or NaN sub-block scale; only reachable
// with values whose squares overflow float32) these transcriptions carry on with the first
// neighbour, as QuantLab's kernels do. iq1_find_best_neighbour2's whole-grid fallback (reached
// only there, and reading past its input in ggml) is replaced by the same rule.
#include "kernels/reference/reference_iquants.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kernels/gguf_iquant_grids.h"
#include "kernels/reference/reference_ggml.h"

namespace ql::kernels::reference {
namespace {

using namespace ggml_ref;
using iquant::Lattice;

constexpr int QK_K = 256;
constexpr float GROUP_MAX_EPS_IQ3_XXS = 1e-8f;
constexpr float GROUP_MAX_EPS_IQ2_S = 1e-8f;
constexpr float GROUP_MAX_EPS_IQ1_M = 1e-7f;
constexpr float GROUP_MAX_EPS_IQ1_S = 1e-12f;
constexpr float IQ1S_DELTA = 0.125f;
constexpr float IQ1M_DELTA = 0.125f;
constexpr int NGRID_IQ1S = 2048;

// ---- search tables (iq2xs_init_impl / iq3xs_init_impl) ---------------------------------------

// the_grid (int8 positions 2 l + 1, `dims` per point), kmap and the neighbour lists. ggml fills
// kmap for every index up to 43691 (8 dimensions) or 4095; the quantizers only look up indices
// whose levels are at most kMaxQ - 1 (2 for the 8-dimensional lattices, whose levels then never
// take the value 3), so the lists are built for those (the others stay -1, never read).
struct IqTables {
    int dims = 0, grid_size = 0;
    std::vector<int8_t> grid;
    std::vector<int> map;
    std::vector<uint16_t> neighbours;
};


IqTables build_tables(Lattice which) {
    const iquant::LatticeTable& t = iquant::lattice_table(which);
    IqTables T;
    T.dims = t.dims;
    T.grid_size = t.size;
    const int bits = t.bits, mask = (1 << bits) - 1;
    const int kmap_size = t.dims == 8 ? 43692 : 4096;
    const int nwant = t.neighbour_shells;
    T.grid.resize(static_cast<size_t>(t.size * t.dims));
    for (int k = 0; k < t.size; ++k)
        for (int i = 0; i < t.dims; ++i) {
            const int l = (t.points[k] >> bits * i) & mask;
            T.grid[static_cast<size_t>(k * t.dims + i)] = static_cast<int8_t>(2 * l + 1);
        }
    T.map.assign(static_cast<size_t>(kmap_size), -1);
    for (int i = 0; i < t.size; ++i) {
        uint16_t index = 0;
        for (int k = 0; k < t.dims; ++k) {
            const uint16_t q = static_cast<uint16_t>((T.grid[static_cast<size_t>(i * t.dims + k)] - 1) / 2);
            index = static_cast<uint16_t>(index | (q << bits * k));
        }
        T.map[index] = i;
    }
    // ggml's (d2, j) pairs and qsort with iq2_compare_func / iq3_compare_func: a total order (j is
    // unique), so std::sort of the pairs gives the same sequence.
    std::vector<std::pair<int, int>> dist2(static_cast<size_t>(t.size));
    int8_t pos[8];
    for (int i = 0; i < kmap_size; ++i) {
        if (T.map[static_cast<size_t>(i)] >= 0) continue;
        bool reachable = true;
        for (int k = 0; k < t.dims; ++k) {
            const int l = (i >> bits * k) & mask;
            if (t.dims == 8 && l > 2) reachable = false;
            pos[k] = static_cast<int8_t>(2 * l + 1);
        }
        if (!reachable) continue;
        for (int j = 0; j < t.size; ++j) {
            const int8_t* pg = T.grid.data() + j * t.dims;
            int d2 = 0;
            for (int k = 0; k < t.dims; ++k) d2 += (pg[k] - pos[k]) * (pg[k] - pos[k]);
            dist2[static_cast<size_t>(j)] = {d2, j};
        }
        std::sort(dist2.begin(), dist2.end());
        const size_t start = T.neighbours.size();
        T.map[static_cast<size_t>(i)] = -static_cast<int>(start + 1);
        T.neighbours.push_back(0);
        int d2 = dist2[0].first;
        int n = 0, nhave = 1;
        for (int j = 0; j < t.size; ++j) {
            if (dist2[static_cast<size_t>(j)].first > d2) {
                if (nhave == nwant) break;
                d2 = dist2[static_cast<size_t>(j)].first;
                ++nhave;
            }
            T.neighbours.push_back(static_cast<uint16_t>(dist2[static_cast<size_t>(j)].second));
            ++n;
        }
        T.neighbours[start] = static_cast<uint16_t>(n);
    }
    return T;
}

// ggml_quantize_init: once per lattice, under a lock.
const IqTables& tables(Lattice which) {
    static std::once_flag once[6];
    static std::unique_ptr<IqTables> built[6];
    const int k = static_cast<int>(which);
    std::call_once(once[k], [&] { built[k] = std::make_unique<IqTables>(build_tables(which)); });
    return *built[k];
}

const uint16_t* neighbours_of(const IqTables& T, int u) { return T.neighbours.data() + (-T.map[static_cast<size_t>(u)] - 1); }

// iq2_find_best_neighbour / iq3_find_best_neighbour (dims 8 / 4).
int iq_find_best_neighbour(const uint16_t* neighbours, const IqTables& T, const float* xval, const float* weight,
                           float scale, int8_t* L) {
    const int num_neighbors = neighbours[0];
    float best_d2 = FLT_MAX;
    int grid_index = -1;
    for (int j = 1; j <= num_neighbors; ++j) {
        const int8_t* pg = T.grid.data() + neighbours[j] * T.dims;
        float d2 = 0;
        for (int i = 0; i < T.dims; ++i) {
            float q = pg[i];
            float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            grid_index = neighbours[j];
        }
    }
    if (grid_index < 0) grid_index = neighbours[1];  // ggml: GGML_ASSERT(grid_index >= 0)
    const int8_t* pg = T.grid.data() + grid_index * T.dims;
    for (int i = 0; i < T.dims; ++i) L[i] = static_cast<int8_t>((pg[i] - 1) / 2);
    return grid_index;
}

// The point of levels L (dims of them), or ggml's abort case: the first neighbour.
int on_grid_index(const IqTables& T, const int8_t* L, int bits) {
    uint16_t u = 0;
    for (int i = 0; i < T.dims; ++i) u = static_cast<uint16_t>(u | (L[i] << bits * i));
    const int grid_index = T.map[u];
    return grid_index >= 0 ? grid_index : neighbours_of(T, u)[1];  // ggml: "Oops: found point not on grid", abort
}

void put_u16(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v & 0xFF);
    p[1] = static_cast<uint8_t>((v >> 8) & 0xFF);
}
void put_u32(uint8_t* p, uint32_t v) {
    for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>((v >> 8 * k) & 0xFF);
}
uint32_t get_u16(const uint8_t* p) { return static_cast<uint32_t>(p[0] | (p[1] << 8)); }
uint32_t get_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

// The even-parity sign trick of IQ2_XXS / IQ2_XS / IQ3_XXS: groups of 8 get |x|, and when an odd
// number of them is negative the one with the smallest weight * x^2 takes the wrong sign.
void even_signs(const float* xb, const float* weight, float* xval, uint8_t* block_signs, int groups) {
    for (int k = 0; k < groups; ++k) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            if (xb[8 * k + i] >= 0)
                xval[8 * k + i] = xb[8 * k + i];
            else {
                xval[8 * k + i] = -xb[8 * k + i];
                ++nflip;
                s = static_cast<uint8_t>(s | (1 << i));
            }
        }
        if (nflip % 2) {
            int imin = 0;
            float min = weight[8 * k + imin] * xb[8 * k + imin] * xb[8 * k + imin];
            for (int i = 1; i < 8; ++i) {
                float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s = static_cast<uint8_t>(s ^ (1 << imin));
        }
        block_signs[k] = s & 127;
    }
}

// ---- IQ2_XXS (66 B: d @0, qs as 16 uint32 @2) ---------------------------------------------------

void quantize_row_iq2_xxs_impl(const float* x, uint8_t* y, int64_t n, const float* quant_weights) {
    const IqTables& T = tables(Lattice::IQ2_XXS);
    const int kMaxQ = 3;
    const int64_t nbl = n / QK_K;
    float scales[QK_K / 32];
    float weight[32];
    float xval[32];
    int8_t L[32];
    int8_t Laux[32];
    float waux[32];
    uint8_t block_signs[4];
    uint32_t q2[2 * (QK_K / 32)];
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + 66 * ibl;
        put_fp16(yb, 0.f);
        std::memset(q2, 0, QK_K / 4);
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float* xb = xbl + 32 * ib;
            const float* qw = quant_weights + QK_K * ibl + 32 * ib;
            for (int i = 0; i < 32; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
            even_signs(xb, weight, xval, block_signs, 4);
            float max = xval[0];
            for (int i = 1; i < 32; ++i) max = MAX(max, xval[i]);
            if (max < 1e-15f) {  // GROUP_MAX_EPS
                scales[ib] = 0;
                std::memset(L, 0, 32);
                continue;
            }
            float scale = make_qp_quants(32, kMaxQ + 1, xval, reinterpret_cast<uint8_t*>(L), weight);
            float eff_max = scale * kMaxQ;
            if (eff_max <= 0) {
                scales[ib] = 0;
                std::memset(L, 0, 32);
                continue;
            }
            float best = 0;
            for (int is = -6; is <= 6; ++is) {
                float id = (2 * kMaxQ - 1 + is * 0.1f) / eff_max;
                float this_scale = 1 / id;
                for (int k = 0; k < 4; ++k) {
                    for (int i = 0; i < 8; ++i) {
                        int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
                        Laux[8 * k + i] = static_cast<int8_t>(MAX(0, MIN(kMaxQ - 1, l)));
                    }
                    uint16_t u = 0;
                    for (int i = 0; i < 8; ++i) u = static_cast<uint16_t>(u | (Laux[8 * k + i] << 2 * i));
                    int grid_index = T.map[u];
                    if (grid_index < 0)
                        iq_find_best_neighbour(neighbours_of(T, u), T, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 32; ++i) {
                    float w = weight[i];
                    float q = 2 * Laux[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    std::memcpy(L, Laux, 32);
                }
            }
            if (scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < 4; ++k) {
                    uint16_t u = 0;
                    for (int i = 0; i < 8; ++i) {
                        int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
                        l = MAX(0, MIN(kMaxQ - 1, l));
                        u = static_cast<uint16_t>(u | (l << 2 * i));
                    }
                    int grid_index = T.map[u];
                    if (grid_index < 0)
                        grid_index = iq_find_best_neighbour(neighbours_of(T, u), T, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
                    const int8_t* pg = T.grid.data() + grid_index * 8;
                    for (int i = 0; i < 8; ++i) L[8 * k + i] = static_cast<int8_t>((pg[i] - 1) / 2);
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 32; ++i) {
                    float w = weight[i];
                    float q = 2 * L[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0) scale = sumqx / sumq2;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; ++k) block_signs[k] = (~block_signs[k]) & 127;
            }
            for (int k = 0; k < 4; ++k) {
                const int grid_index = on_grid_index(T, L + 8 * k, 2);
                q2[2 * ib + 0] |= (static_cast<uint32_t>(grid_index) << 8 * k);
                q2[2 * ib + 1] |= (static_cast<uint32_t>(block_signs[k]) << 7 * k);
            }
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            max_scale = MAX(max_scale, scale);
        }
        if (!max_scale) {
            std::memset(yb + 2, 0, QK_K / 4);
            continue;
        }
        float d = max_scale / 31;
        put_fp16(yb, d);
        float id = 1 / d;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            int l = nearest_int(0.5f * (id * scales[ib] - 1));
            l = MAX(0, MIN(15, l));
            q2[2 * ib + 1] |= (static_cast<uint32_t>(l) << 28);
        }
        for (int k = 0; k < 16; ++k) put_u32(yb + 2 + 4 * k, q2[k]);
    }
}

// ---- IQ2_XS (74 B: d @0, qs as 32 uint16 @2, scales[8] @66) and IQ2_S (82 B: d @0, qs[32] @2,
// signs[32] @34, qh[8] @66, scales[8] @74): one search over sub-blocks of 16 ---------------------

void quantize_row_iq2_xs_s_impl(bool is_s, const float* x, uint8_t* y, int64_t n, const float* quant_weights) {
    const IqTables& T = tables(is_s ? Lattice::IQ2_S : Lattice::IQ2_XS);
    const int kMaxQ = 3;
    const int64_t nbl = n / QK_K;
    const int bb = is_s ? 82 : 74;
    float scales[QK_K / 16];
    float weight[16];
    float xval[16];
    int8_t L[16];
    int8_t Laux[16];
    float waux[16];
    bool is_on_grid[2];
    bool is_on_grid_aux[2];
    uint8_t block_signs[2];
    uint16_t q2[2 * (QK_K / 16)];
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + bb * ibl;
        std::memset(yb, 0, static_cast<size_t>(bb));
        put_fp16(yb, 0.f);
        std::memset(q2, 0, QK_K / 4);
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = is_s ? 2 * sumx2 / QK_K : sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float* xb = xbl + 16 * ib;
            if (quant_weights) {
                const float* qw = quant_weights + QK_K * ibl + 16 * ib;
                for (int i = 0; i < 16; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            } else {  // IQ2_S only (IQ2_XS requires quant_weights)
                for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
            }
            for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
            if (is_s) {
                for (int k = 0; k < 2; ++k) {
                    uint8_t s = 0;
                    for (int i = 0; i < 8; ++i) {
                        if (xb[8 * k + i] >= 0)
                            xval[8 * k + i] = xb[8 * k + i];
                        else {
                            xval[8 * k + i] = -xb[8 * k + i];
                            s = static_cast<uint8_t>(s | (1 << i));
                        }
                    }
                    block_signs[k] = s;
                }
            } else {
                even_signs(xb, weight, xval, block_signs, 2);
            }
            float max = xval[0];
            for (int i = 1; i < 16; ++i) max = MAX(max, xval[i]);
            std::memset(L, 0, 16);
            if (max < (is_s ? GROUP_MAX_EPS_IQ2_S : 1e-15f)) {
                scales[ib] = 0;
                continue;
            }
            float best = 0;
            float scale = max / (2 * kMaxQ - 1);
            is_on_grid[0] = is_on_grid[1] = true;
            for (int is = -9; is <= 9; ++is) {
                float id = (2 * kMaxQ - 1 + is * 0.1f) / max;
                float this_scale = 1 / id;
                for (int k = 0; k < 2; ++k) {
                    for (int i = 0; i < 8; ++i) {
                        int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
                        Laux[8 * k + i] = static_cast<int8_t>(MAX(0, MIN(kMaxQ - 1, l)));
                    }
                    uint16_t u = 0;
                    for (int i = 0; i < 8; ++i) u = static_cast<uint16_t>(u | (Laux[8 * k + i] << 2 * i));
                    int grid_index = T.map[u];
                    is_on_grid_aux[k] = true;
                    if (grid_index < 0) {
                        is_on_grid_aux[k] = false;
                        iq_find_best_neighbour(neighbours_of(T, u), T, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
                    }
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 16; ++i) {
                    float w = weight[i];
                    float q = 2 * Laux[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    for (int i = 0; i < 16; ++i) L[i] = Laux[i];
                    for (int k = 0; k < 2; ++k) is_on_grid[k] = is_on_grid_aux[k];
                }
            }
            int n_not_ongrid = 0;
            for (int k = 0; k < 2; ++k)
                if (!is_on_grid[k]) ++n_not_ongrid;
            if (n_not_ongrid > 0 && scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < 2; ++k) {
                    if (is_on_grid[k]) continue;
                    uint16_t u = 0;
                    for (int i = 0; i < 8; ++i) {
                        int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
                        l = MAX(0, MIN(kMaxQ - 1, l));
                        u = static_cast<uint16_t>(u | (l << 2 * i));
                        L[8 * k + i] = static_cast<int8_t>(l);
                    }
                    int grid_index = T.map[u];
                    if (grid_index < 0)
                        iq_find_best_neighbour(neighbours_of(T, u), T, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 16; ++i) {
                    float w = weight[i];
                    float q = 2 * L[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0) scale = sumqx / sumq2;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 2; ++k)
                    block_signs[k] = static_cast<uint8_t>(is_s ? ~block_signs[k] : (~block_signs[k]) & 127);
            }
            for (int k = 0; k < 2; ++k) {
                const int grid_index = on_grid_index(T, L + 8 * k, 2);
                if (is_s) {
                    const int i8 = 2 * ib + k;
                    yb[2 + i8] = static_cast<uint8_t>(grid_index & 255);
                    yb[66 + i8 / 4] = static_cast<uint8_t>(yb[66 + i8 / 4] | ((grid_index >> 8) << 2 * (i8 % 4)));
                    yb[2 + QK_K / 8 + i8] = block_signs[k];
                } else {
                    q2[2 * ib + k] = static_cast<uint16_t>(grid_index | (block_signs[k] << 9));
                }
            }
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            max_scale = MAX(max_scale, scale);
        }
        if (!max_scale) {
            if (!is_s) std::memset(yb + 2, 0, QK_K / 4);
            continue;
        }
        float d = max_scale / 31;
        put_fp16(yb, is_s ? d * 0.9875f : d);
        float id = 1 / d;
        uint8_t* ysc = yb + (is_s ? 74 : 66);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            int l = nearest_int(0.5f * (id * scales[ib] - 1));
            l = MAX(0, MIN(15, l));
            if (ib % 2 == 0)
                ysc[ib / 2] = static_cast<uint8_t>(l);
            else
                ysc[ib / 2] = static_cast<uint8_t>(ysc[ib / 2] | (l << 4));
        }
        if (!is_s)
            for (int k = 0; k < 32; ++k) put_u16(yb + 2 + 2 * k, q2[k]);
    }
}

// ---- IQ3_XXS (98 B: d @0, qs[64] @2, scales_and_signs as 8 uint32 @66) ---------------------------

void quantize_row_iq3_xxs_impl(const float* x, uint8_t* y, int64_t n, const float* quant_weights) {
    const IqTables& T = tables(Lattice::IQ3_XXS);
    const int kMaxQ = 8;
    const int64_t nbl = n / QK_K;
    float scales[QK_K / 32];
    float weight[32];
    float xval[32];
    int8_t L[32];
    int8_t Laux[32];
    float waux[32];
    bool is_on_grid[8];
    bool is_on_grid_aux[8];
    uint8_t block_signs[8];
    uint8_t q3[3 * (QK_K / 8) + QK_K / 32];
    uint32_t scales_and_signs[QK_K / 32];  // at q3 + QK_K / 4 in ggml
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + 98 * ibl;
        put_fp16(yb, 0.f);
        std::memset(q3, 0, sizeof q3);
        std::memset(scales_and_signs, 0, sizeof scales_and_signs);
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float* xb = xbl + 32 * ib;
            if (quant_weights) {
                const float* qw = quant_weights + QK_K * ibl + 32 * ib;
                for (int i = 0; i < 32; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            } else {
                for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
            }
            for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
            even_signs(xb, weight, xval, block_signs, 4);
            float max = xval[0];
            for (int i = 1; i < 32; ++i) max = MAX(max, xval[i]);
            std::memset(L, 0, 32);
            if (max < GROUP_MAX_EPS_IQ3_XXS) {
                scales[ib] = 0;
                continue;
            }
            float best = 0;
            float scale = max / (2 * kMaxQ - 1);
            for (int k = 0; k < 8; ++k) is_on_grid[k] = true;
            for (int is = -15; is <= 15; ++is) {
                float id = (2 * kMaxQ - 1 + is * 0.2f) / max;
                float this_scale = 1 / id;
                for (int k = 0; k < 8; ++k) {
                    for (int i = 0; i < 4; ++i) {
                        int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
                        Laux[4 * k + i] = static_cast<int8_t>(MAX(0, MIN(kMaxQ - 1, l)));
                    }
                    uint16_t u = 0;
                    for (int i = 0; i < 4; ++i) u = static_cast<uint16_t>(u | (Laux[4 * k + i] << 3 * i));
                    int grid_index = T.map[u];
                    is_on_grid_aux[k] = true;
                    if (grid_index < 0) {
                        is_on_grid_aux[k] = false;
                        iq_find_best_neighbour(neighbours_of(T, u), T, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
                    }
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 32; ++i) {
                    float w = weight[i];
                    float q = 2 * Laux[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    for (int i = 0; i < 32; ++i) L[i] = Laux[i];
                    for (int k = 0; k < 8; ++k) is_on_grid[k] = is_on_grid_aux[k];
                }
            }
            int n_not_ongrid = 0;
            for (int k = 0; k < 8; ++k)
                if (!is_on_grid[k]) ++n_not_ongrid;
            if (n_not_ongrid > 0 && scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < 8; ++k) {
                    if (is_on_grid[k]) continue;
                    uint16_t u = 0;
                    for (int i = 0; i < 4; ++i) {
                        int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
                        l = MAX(0, MIN(kMaxQ - 1, l));
                        u = static_cast<uint16_t>(u | (l << 3 * i));
                    }
                    int grid_index = T.map[u];
                    if (grid_index < 0)
                        grid_index = iq_find_best_neighbour(neighbours_of(T, u), T, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
                    const int8_t* pg = T.grid.data() + grid_index * 4;
                    for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((pg[i] - 1) / 2);
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < 32; ++i) {
                    float w = weight[i];
                    float q = 2 * L[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0) scale = sumqx / sumq2;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; ++k) block_signs[k] = (~block_signs[k]) & 127;
            }
            for (int k = 0; k < 8; ++k) q3[8 * ib + k] = static_cast<uint8_t>(on_grid_index(T, L + 4 * k, 3));
            scales_and_signs[ib] = static_cast<uint32_t>(block_signs[0] | (block_signs[1] << 7) | (block_signs[2] << 14) |
                                                         (block_signs[3] << 21));
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            max_scale = MAX(max_scale, scale);
        }
        if (!max_scale) {
            std::memset(yb + 2, 0, 96);
            continue;
        }
        float d = max_scale / 31;
        put_fp16(yb, d * 1.0125f);
        float id = 1 / d;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            int l = nearest_int(0.5f * (id * scales[ib] - 1));
            l = MAX(0, MIN(15, l));
            scales_and_signs[ib] |= (static_cast<uint32_t>(l) << 28);
        }
        std::memcpy(yb + 2, q3, 64);
        for (int ib = 0; ib < 8; ++ib) put_u32(yb + 66 + 4 * ib, scales_and_signs[ib]);
    }
}

// ---- IQ3_S (110 B: d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106) --------------------

void quantize_row_iq3_s_impl(const float* x, uint8_t* y, int n, const float* quant_weights) {
    const IqTables& T = tables(Lattice::IQ3_S);
    const int block_size = 32;  // IQ3S_BLOCK_SIZE
    const int kMaxQ = 8;
    const int64_t nbl = n / QK_K;
    const int bs4 = block_size / 4;
    const int bs8 = block_size / 8;
    float scales[QK_K / 32];
    float weight[32];
    float xval[32];
    int8_t L[32];
    int8_t Laux[32];
    float waux[32];
    bool is_on_grid[8];
    bool is_on_grid_aux[8];
    uint8_t block_signs[4];
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + 110 * ibl;
        std::memset(yb, 0, 110);
        put_fp16(yb, 0.f);
        uint8_t* qs = yb + 2;
        uint8_t* qh = yb + 66;
        uint8_t* signs = yb + 74;
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / block_size; ++ib) {
            const float* xb = xbl + block_size * ib;
            if (quant_weights) {
                const float* qw = quant_weights + QK_K * ibl + block_size * ib;
                for (int i = 0; i < block_size; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            } else {
                for (int i = 0; i < block_size; ++i) weight[i] = xb[i] * xb[i];
            }
            for (int i = 0; i < block_size; ++i) waux[i] = std::sqrt(weight[i]);
            for (int k = 0; k < bs8; ++k) {
                uint8_t s = 0;
                for (int i = 0; i < 8; ++i) {
                    if (xb[8 * k + i] >= 0)
                        xval[8 * k + i] = xb[8 * k + i];
                    else {
                        xval[8 * k + i] = -xb[8 * k + i];
                        s = static_cast<uint8_t>(s | (1 << i));
                    }
                }
                block_signs[k] = s;
            }
            float max = xval[0];
            for (int i = 1; i < block_size; ++i) max = MAX(max, xval[i]);
            std::memset(L, 0, static_cast<size_t>(block_size));
            if (!max) {
                scales[ib] = 0;
                continue;
            }
            float best = 0;
            float scale = max / (2 * kMaxQ - 1);
            for (int k = 0; k < bs4; ++k) is_on_grid[k] = false;
            for (int is = -9; is <= 9; ++is) {
                float id = (2 * kMaxQ - 1 + is * 0.2f) / max;
                float this_scale = 1 / id;
                for (int k = 0; k < bs4; ++k) {
                    for (int i = 0; i < 4; ++i) {
                        int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
                        Laux[4 * k + i] = static_cast<int8_t>(MAX(0, MIN(kMaxQ - 1, l)));
                    }
                    uint16_t u = 0;
                    for (int i = 0; i < 4; ++i) u = static_cast<uint16_t>(u | (Laux[4 * k + i] << 3 * i));
                    int grid_index = T.map[u];
                    is_on_grid_aux[k] = true;
                    if (grid_index < 0) {
                        is_on_grid_aux[k] = false;
                        iq_find_best_neighbour(neighbours_of(T, u), T, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
                    }
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < block_size; ++i) {
                    float w = weight[i];
                    float q = 2 * Laux[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    for (int i = 0; i < block_size; ++i) L[i] = Laux[i];
                    for (int k = 0; k < bs4; ++k) is_on_grid[k] = is_on_grid_aux[k];
                }
            }
            int n_not_ongrid = 0;
            for (int k = 0; k < bs4; ++k)
                if (!is_on_grid[k]) ++n_not_ongrid;
            if (n_not_ongrid > 0 && scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < bs4; ++k) {
                    uint16_t u = 0;
                    for (int i = 0; i < 4; ++i) {
                        int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
                        l = MAX(0, MIN(kMaxQ - 1, l));
                        u = static_cast<uint16_t>(u | (l << 3 * i));
                    }
                    int grid_index = T.map[u];
                    if (grid_index < 0)
                        grid_index = iq_find_best_neighbour(neighbours_of(T, u), T, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
                    const int8_t* pg = T.grid.data() + grid_index * 4;
                    for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((pg[i] - 1) / 2);
                }
                float sumqx = 0, sumq2 = 0;
                for (int i = 0; i < block_size; ++i) {
                    float w = weight[i];
                    float q = 2 * L[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0) scale = sumqx / sumq2;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < bs8; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k]);
            }
            for (int k = 0; k < bs4; ++k) {
                const int grid_index = on_grid_index(T, L + 4 * k, 3);
                qs[k] = static_cast<uint8_t>(grid_index & 255);
                qh[(ib * bs4 + k) / 8] = static_cast<uint8_t>(qh[(ib * bs4 + k) / 8] | ((grid_index >> 8) << ((ib * bs4 + k) % 8)));
            }
            qs += bs4;
            for (int k = 0; k < bs8; ++k) signs[k] = block_signs[k];
            signs += bs8;
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            max_scale = MAX(max_scale, scale);
        }
        if (!max_scale) continue;
        float d = max_scale / 31;
        put_fp16(yb, d * 1.033f);
        float id = 1 / d;
        for (int ib = 0; ib < QK_K / block_size; ib += 2) {
            int l1 = nearest_int(0.5f * (id * scales[ib + 0] - 1));
            l1 = MAX(0, MIN(15, l1));
            int l2 = nearest_int(0.5f * (id * scales[ib + 1] - 1));
            l2 = MAX(0, MIN(15, l2));
            yb[106 + ib / 2] = static_cast<uint8_t>(l1 | (l2 << 4));
        }
    }
}

// ---- IQ1_S (50 B: d @0, qs[32] @2, qh as 8 uint16 @34) and IQ1_M (56 B: qs[32] @0, qh[16] @32,
// scales as 4 uint16 @48) -----------------------------------------------------------------------

int iq1_find_best_neighbour2(const uint16_t* neighbours, const IqTables& T, const float* xval, const float* weight,
                             float scale, const float* xg, int8_t* L) {
    const int num_neighbors = neighbours[0];
    float best_score = FLT_MAX;
    int grid_index = -1;
    for (int j = 1; j <= num_neighbors; ++j) {
        const int8_t* pg = T.grid.data() + neighbours[j] * 8;
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            float q = xg[(pg[i] - 1) / 2];
            float w = weight[i];
            float diff = scale * q - xval[i];
            d2 += w * diff * diff;
        }
        if (d2 < best_score) {
            best_score = d2;
            grid_index = neighbours[j];
        }
    }
    if (grid_index < 0) grid_index = neighbours[1];  // ggml: a whole-grid search reading past xval, then an assert
    const int8_t* pg = T.grid.data() + grid_index * 8;
    for (int i = 0; i < 8; ++i) L[i] = static_cast<int8_t>((pg[i] - 1) / 2);
    return grid_index;
}

int iq1_sort_helper(const void* left, const void* right) {
    const float* l = static_cast<const float*>(left);
    const float* r = static_cast<const float*>(right);
    return *l < *r ? -1 : *l > *r ? 1 : 0;
}

// (value, index) pairs as ggml lays them out: a float, then an int in the next 4 bytes.
struct Pair {
    float x;
    int idx;
};

void quantize_row_iq1_s_impl(const float* x, uint8_t* y, int64_t n, const float* quant_weights) {
    const IqTables& T = tables(Lattice::IQ1_S);
    const int block_size = 32;  // IQ1S_BLOCK_SIZE
    const int64_t nbl = n / QK_K;
    const float x_p[3] = {-1 + IQ1S_DELTA, IQ1S_DELTA, 1 + IQ1S_DELTA};
    const float x_m[3] = {-1 - IQ1S_DELTA, -IQ1S_DELTA, 1 - IQ1S_DELTA};
    float scales[QK_K / 32];
    float weight[32];
    int8_t L[32];
    float sumx[33];
    float sumw[33];
    Pair pairs[32];
    uint16_t index[4];
    int8_t shifts[QK_K / 32];
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + 50 * ibl;
        put_fp16(yb, 0.f);
        std::memset(yb + 2, 0, 48);
        uint16_t qh[8] = {};
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / block_size; ++ib) {
            const float* xb = xbl + block_size * ib;
            const float* qw = quant_weights + QK_K * ibl + block_size * ib;
            for (int i = 0; i < block_size; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            float max = std::fabs(xb[0]);
            for (int i = 1; i < block_size; ++i) max = MAX(max, std::fabs(xb[i]));
            if (max < GROUP_MAX_EPS_IQ1_S) {
                scales[ib] = 0;
                shifts[ib] = 1;
                std::memset(L, 1, static_cast<size_t>(block_size));
                continue;
            }
            for (int j = 0; j < block_size; ++j) pairs[j] = Pair{xb[j], j};
            std::qsort(pairs, static_cast<size_t>(block_size), sizeof(Pair), iq1_sort_helper);
            sumx[0] = sumw[0] = 0;
            for (int j = 0; j < block_size; ++j) {
                int i = pairs[j].idx;
                sumx[j + 1] = sumx[j] + weight[i] * xb[i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            float best_score = -FLT_MAX, scale = max;
            int besti1 = -1, besti2 = -1, best_shift = 0;
            for (int i1 = 0; i1 <= block_size; ++i1) {
                for (int i2 = i1; i2 <= block_size; ++i2) {
                    float sumqx = (sumx[i1] - sumx[0]) * x_p[0] + (sumx[i2] - sumx[i1]) * x_p[1] + (sumx[block_size] - sumx[i2]) * x_p[2];
                    float sumq2 = (sumw[i1] - sumw[0]) * x_p[0] * x_p[0] + (sumw[i2] - sumw[i1]) * x_p[1] * x_p[1] +
                                  (sumw[block_size] - sumw[i2]) * x_p[2] * x_p[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = 1;
                    }
                    sumqx = (sumx[i1] - sumx[0]) * x_m[0] + (sumx[i2] - sumx[i1]) * x_m[1] + (sumx[block_size] - sumx[i2]) * x_m[2];
                    sumq2 = (sumw[i1] - sumw[0]) * x_m[0] * x_m[0] + (sumw[i2] - sumw[i1]) * x_m[1] * x_m[1] +
                            (sumw[block_size] - sumw[i2]) * x_m[2] * x_m[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = -1;
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
                scales[ib] = 0;
                shifts[ib] = 1;
                std::memset(L, 1, static_cast<size_t>(block_size));
                continue;
            }
            for (int j = 0; j < besti1; ++j) L[pairs[j].idx] = 0;
            for (int j = besti1; j < besti2; ++j) L[pairs[j].idx] = 1;
            for (int j = besti2; j < block_size; ++j) L[pairs[j].idx] = 2;
            if (scale < 0) {
                for (int j = 0; j < block_size; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
                scale = -scale;
                best_shift = -best_shift;
            }
            bool all_on_grid = true;
            const float* xx = best_shift == 1 ? x_p : x_m;
            for (int k = 0; k < block_size / 8; ++k) {
                uint16_t u = 0;
                for (int j = 0; j < 8; ++j) u = static_cast<uint16_t>(u | (L[8 * k + j] << 2 * j));
                int grid_index = T.map[u];
                if (grid_index < 0) {
                    all_on_grid = false;
                    grid_index = iq1_find_best_neighbour2(neighbours_of(T, u), T, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k);
                }
                index[k] = static_cast<uint16_t>(grid_index);
            }
            if (!all_on_grid) {
                float sumqx = 0, sumq2 = 0;
                for (int k = 0; k < block_size / 8; ++k) {
                    const int8_t* pg = T.grid.data() + index[k] * 8;
                    for (int j = 0; j < 8; ++j) {
                        float w = weight[8 * k + j];
                        float q = xx[(pg[j] - 1) / 2];
                        sumqx += w * q * xb[8 * k + j];
                        sumq2 += w * q * q;
                    }
                }
                if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
            }
            uint16_t h = 0;
            for (int k = 0; k < block_size / 8; ++k) {
                yb[2 + (block_size / 8) * ib + k] = static_cast<uint8_t>(index[k] & 255);
                h = static_cast<uint16_t>(h | ((index[k] >> 8) << 3 * k));
            }
            qh[ib] = h;
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            shifts[ib] = static_cast<int8_t>(best_shift);
            max_scale = MAX(max_scale, scale);
        }
        if (max_scale) {
            float d = max_scale / 15;
            put_fp16(yb, d * 1.125f);
            float id = 1 / d;
            for (int ib = 0; ib < QK_K / block_size; ++ib) {
                int l = nearest_int(0.5f * (id * scales[ib] - 1));
                l = MAX(0, MIN(7, l));
                if (shifts[ib] == -1) l |= 8;
                qh[ib] = static_cast<uint16_t>(qh[ib] | (l << 12));
            }
        }
        for (int ib = 0; ib < 8; ++ib) put_u16(yb + 34 + 2 * ib, qh[ib]);
    }
}

void quantize_row_iq1_m_impl(const float* x, uint8_t* y, int64_t n, const float* quant_weights) {
    const IqTables& T = tables(Lattice::IQ1_S);
    const int block_size = 16;  // IQ1M_BLOCK_SIZE
    const int64_t nbl = n / QK_K;
    const float x_p[3] = {-1 + IQ1M_DELTA, IQ1M_DELTA, 1 + IQ1M_DELTA};
    const float x_m[3] = {-1 - IQ1M_DELTA, -IQ1M_DELTA, 1 - IQ1M_DELTA};
    const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    float scales[QK_K / 16];
    float weight[16];
    int8_t L[16];
    Pair pairs[16];
    uint16_t index[2];
    int8_t shifts[QK_K / 16];
    float sumqx[4], sumq2[4];
    const float* xx = nullptr;
    for (int64_t ibl = 0; ibl < nbl; ++ibl) {
        uint8_t* yb = y + 56 * ibl;
        uint8_t* yqs = yb;
        uint8_t* yqh = yb + 32;
        std::memset(yb, 0, 56);
        uint16_t sc[4] = {};
        float max_scale = 0;
        const float* xbl = x + QK_K * ibl;
        float sumx2 = 0;
        for (int i = 0; i < QK_K; ++i) sumx2 += xbl[i] * xbl[i];
        float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < QK_K / block_size; ++ib) {
            const float* xb = xbl + block_size * ib;
            if (quant_weights) {
                const float* qw = quant_weights + QK_K * ibl + block_size * ib;
                for (int i = 0; i < block_size; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            } else {
                for (int i = 0; i < block_size; ++i) weight[i] = xb[i] * xb[i];
            }
            float max = std::fabs(xb[0]);
            for (int i = 1; i < block_size; ++i) max = MAX(max, std::fabs(xb[i]));
            if (max < GROUP_MAX_EPS_IQ1_M) {
                scales[ib] = 0;
                shifts[ib] = 0;
                std::memset(L, 1, static_cast<size_t>(block_size));
                continue;
            }
            for (int j = 0; j < block_size; ++j) pairs[j] = Pair{xb[j], j};
            std::qsort(pairs, static_cast<size_t>(block_size), sizeof(Pair), iq1_sort_helper);
            float best_score = -FLT_MAX, scale = max;
            int besti1 = -1, besti2 = -1, best_k = -1;
            {
                float px[2][16 + 1];
                float pw[2][16 + 1];
                px[0][0] = px[1][0] = 0;
                pw[0][0] = pw[1][0] = 0;
                for (int j = 0; j < block_size; ++j) {
                    const int i = pairs[j].idx;
                    const int h = i < block_size / 2 ? 0 : 1;
                    px[h][j + 1] = px[h][j] + weight[i] * xb[i];
                    px[1 - h][j + 1] = px[1 - h][j];
                    pw[h][j + 1] = pw[h][j] + weight[i];
                    pw[1 - h][j + 1] = pw[1 - h][j];
                }
                const float txs[2] = {px[0][block_size], px[1][block_size]};
                const float tws[2] = {pw[0][block_size], pw[1][block_size]};
                const float p2 = x_p[2], m2 = x_m[2];
                const float cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1];
                const float cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2];
                const float cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1];
                const float cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2];
                for (int i1 = 0; i1 <= block_size; ++i1) {
                    for (int i2 = i1; i2 <= block_size; ++i2) {
                        float qx_p[2], qx_m[2], q2_p[2], q2_m[2];
                        for (int h = 0; h < 2; ++h) {
                            const float sx = px[h][i1] + px[h][i2];
                            qx_p[h] = txs[h] * p2 - sx;
                            qx_m[h] = txs[h] * m2 - sx;
                            q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                            q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
                        }
                        sumqx[0] = qx_p[0] + qx_p[1];
                        sumqx[1] = qx_p[0] + qx_m[1];
                        sumqx[2] = qx_m[0] + qx_p[1];
                        sumqx[3] = qx_m[0] + qx_m[1];
                        sumq2[0] = q2_p[0] + q2_p[1];
                        sumq2[1] = q2_p[0] + q2_m[1];
                        sumq2[2] = q2_m[0] + q2_p[1];
                        sumq2[3] = q2_m[0] + q2_m[1];
                        for (int k = 0; k < 4; ++k) {
                            if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                                scale = sumqx[k] / sumq2[k];
                                best_score = scale * sumqx[k];
                                besti1 = i1;
                                besti2 = i2;
                                best_k = k;
                            }
                        }
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || best_k < 0) {
                scales[ib] = 0;
                shifts[ib] = 0;
                std::memset(L, 1, static_cast<size_t>(block_size));
                continue;
            }
            for (int j = 0; j < besti1; ++j) L[pairs[j].idx] = 0;
            for (int j = besti1; j < besti2; ++j) L[pairs[j].idx] = 1;
            for (int j = besti2; j < block_size; ++j) L[pairs[j].idx] = 2;
            if (scale < 0) {
                for (int j = 0; j < block_size; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
                scale = -scale;
                best_k = best_k == 0 ? 3 : best_k == 1 ? 2 : best_k == 2 ? 1 : 0;
            }
            bool all_on_grid = true;
            for (int k = 0; k < block_size / 8; ++k) {
                if (k == 0)
                    xx = best_k < 2 ? x_p : x_m;
                else
                    xx = best_k % 2 == 0 ? x_p : x_m;
                uint16_t u = 0;
                for (int j = 0; j < 8; ++j) u = static_cast<uint16_t>(u | (L[8 * k + j] << 2 * j));
                int grid_index = T.map[u];
                if (grid_index < 0) {
                    all_on_grid = false;
                    grid_index = iq1_find_best_neighbour2(neighbours_of(T, u), T, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k);
                }
                index[k] = static_cast<uint16_t>(grid_index);
            }
            if (!all_on_grid) {
                float sumqx_f = 0, sumq2_f = 0;
                for (int k = 0; k < block_size / 8; ++k) {
                    if (k == 0)
                        xx = best_k < 2 ? x_p : x_m;
                    else
                        xx = best_k % 2 == 0 ? x_p : x_m;
                    const int8_t* pg = T.grid.data() + index[k] * 8;
                    for (int j = 0; j < 8; ++j) {
                        float w = weight[8 * k + j];
                        float q = xx[(pg[j] - 1) / 2];
                        sumqx_f += w * q * xb[8 * k + j];
                        sumq2_f += w * q * q;
                    }
                }
                if (sumqx_f > 0 && sumq2_f > 0) scale = sumqx_f / sumq2_f;
            }
            yqs[2 * ib + 0] = static_cast<uint8_t>(index[0] & 255);
            yqs[2 * ib + 1] = static_cast<uint8_t>(index[1] & 255);
            yqh[ib] = static_cast<uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
            scales[ib] = scale;  // ggml: GGML_ASSERT(scale >= 0)
            shifts[ib] = static_cast<int8_t>(best_k);
            max_scale = MAX(max_scale, scale);
        }
        if (!max_scale) continue;
        float d = max_scale / 15;
        float id = 1 / d;
        float sumqx_f = 0, sumq2_f = 0;
        for (int ib = 0; ib < QK_K / block_size; ++ib) {
            int l = nearest_int(0.5f * (id * scales[ib + 0] - 1));
            l = MAX(0, MIN(7, l));
            sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << 3 * (ib % 4)));
            yqh[ib] = static_cast<uint8_t>(yqh[ib] | masks[shifts[ib]]);
            const float* xb = xbl + block_size * ib;
            if (quant_weights) {
                const float* qw = quant_weights + QK_K * ibl + block_size * ib;
                for (int i = 0; i < block_size; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
            } else {
                for (int i = 0; i < block_size; ++i) weight[i] = xb[i] * xb[i];
            }
            for (int k = 0; k < block_size / 8; ++k) {
                if (k == 0)
                    xx = shifts[ib] < 2 ? x_p : x_m;
                else
                    xx = shifts[ib] % 2 == 0 ? x_p : x_m;
                const int8_t* pg = T.grid.data() + (yqs[2 * ib + k] + ((yqh[ib] << (8 - 4 * k)) & 0x700)) * 8;
                for (int j = 0; j < 8; ++j) {
                    float w = weight[8 * k + j];
                    float q = xx[(pg[j] - 1) / 2] * (2 * l + 1);
                    sumqx_f += w * q * xb[8 * k + j];
                    sumq2_f += w * q * q;
                }
            }
        }
        if (sumq2_f > 0) d = sumqx_f / sumq2_f;
        const uint16_t s = fp32_to_fp16(d * 1.1125f);
        sc[0] = static_cast<uint16_t>(sc[0] | ((s & 0x000f) << 12));
        sc[1] = static_cast<uint16_t>(sc[1] | ((s & 0x00f0) << 8));
        sc[2] = static_cast<uint16_t>(sc[2] | ((s & 0x0f00) << 4));
        sc[3] = static_cast<uint16_t>(sc[3] | ((s & 0xf000) << 0));
        for (int k = 0; k < 4; ++k) put_u16(yb + 48 + 2 * k, sc[k]);
    }
}

// ---- TQ1_0 (54 B: qs[48] @0, qh[4] @48, d @52) and TQ2_0 (66 B: qs[64] @0, d @64) -----------------

// lroundf(v) + 1 as ggml computes it on x86-64 glibc: a NaN or infinite v (an all-subnormal block
// whose 1/amax overflows) converts to LONG_MIN, and LONG_MIN + 1 truncated to int is 1.
int ternary_digit(float v) { return std::isfinite(v) ? static_cast<int>(std::lround(v)) + 1 : 1; }

void quantize_row_tq1_0_ref(const float* x, uint8_t* y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t* yb = y + 54 * i;
        uint8_t* qs = yb;
        uint8_t* qh = yb + 48;
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float v = x[j];
            amax = MAX(amax, std::fabs(v));
        }
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        put_fp16(yb + 52, d);
        for (size_t j = 0; j < 48 - 48 % 32; j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t nn = 0; nn < 5; ++nn) {
                    int xi = ternary_digit(x[m + nn * 32] * id);
                    q = static_cast<uint8_t>(q * 3);
                    q = static_cast<uint8_t>(q + xi);
                }
                q = static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
                qs[j + m] = q;
            }
            x += 5 * 32;
        }
        for (size_t j = 48 - 48 % 32; j < 48; j += 16) {
            for (size_t m = 0; m < 16; ++m) {
                uint8_t q = 0;
                for (size_t nn = 0; nn < 5; ++nn) {
                    int xi = ternary_digit(x[m + nn * 16] * id);
                    q = static_cast<uint8_t>(q * 3);
                    q = static_cast<uint8_t>(q + xi);
                }
                q = static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
                qs[j + m] = q;
            }
            x += 5 * 16;
        }
        for (size_t j = 0; j < 4; ++j) {
            uint8_t q = 0;
            for (size_t m = 0; m < 4; ++m) {
                int xi = ternary_digit(x[j + m * 4] * id);
                q = static_cast<uint8_t>(q * 3);
                q = static_cast<uint8_t>(q + xi);
            }
            q = static_cast<uint8_t>(q * 3);
            q = static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
            qh[j] = q;
        }
        x += 4 * 4;
    }
}

void quantize_row_tq2_0_ref(const float* x, uint8_t* y, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t* yb = y + 66 * i;
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float v = x[j];
            amax = MAX(amax, std::fabs(v));
        }
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        put_fp16(yb + 64, d);
        for (size_t j = 0; j < 64; j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t nn = 0; nn < 4; ++nn) {
                    int xi = ternary_digit(x[m + nn * 32] * id);
                    q = static_cast<uint8_t>(q + ((xi & 3) << (2 * nn)));
                }
                yb[j + m] = q;
            }
            x += 4 * 32;
        }
    }
}

}  // namespace

int64_t iquant_block_bytes(IQuant t) {
    switch (t) {
        case IQuant::IQ2_XXS: return 66;
        case IQuant::IQ2_XS: return 74;
        case IQuant::IQ2_S: return 82;
        case IQuant::IQ3_XXS: return 98;
        case IQuant::IQ3_S: return 110;
        case IQuant::IQ1_S: return 50;
        case IQuant::IQ1_M: return 56;
        case IQuant::TQ1_0: return 54;
        case IQuant::TQ2_0: return 66;
    }
    return 0;
}

bool iquant_requires_importance(IQuant t) { return t == IQuant::IQ2_XXS || t == IQuant::IQ2_XS || t == IQuant::IQ1_S; }

std::vector<uint8_t> iquant_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, IQuant t,
                                     const std::vector<float>& importance) {
    if (cols % QK_K != 0) throw std::invalid_argument("iquant_quantize: cols must be a multiple of 256");
    if (!importance.empty() && static_cast<int64_t>(importance.size()) != cols)
        throw std::invalid_argument("iquant_quantize: importance must hold one value per column");
    if (importance.empty() && iquant_requires_importance(t))
        throw std::invalid_argument("iquant_quantize: this type requires importance (ggml_quantize_requires_imatrix)");
    const float* qw = importance.empty() ? nullptr : importance.data();
    const int64_t bb = iquant_block_bytes(t), nb = cols / QK_K;
    std::vector<uint8_t> out(static_cast<size_t>(rows * nb * bb));
    for (int64_t r = 0; r < rows; ++r) {  // quantize_iq*: row by row, each with the same imatrix
        const float* xr = x.data() + r * cols;
        uint8_t* yr = out.data() + r * nb * bb;
        switch (t) {
            case IQuant::IQ2_XXS: quantize_row_iq2_xxs_impl(xr, yr, cols, qw); break;
            case IQuant::IQ2_XS: quantize_row_iq2_xs_s_impl(false, xr, yr, cols, qw); break;
            case IQuant::IQ2_S: quantize_row_iq2_xs_s_impl(true, xr, yr, cols, qw); break;
            case IQuant::IQ3_XXS: quantize_row_iq3_xxs_impl(xr, yr, cols, qw); break;
            case IQuant::IQ3_S: quantize_row_iq3_s_impl(xr, yr, static_cast<int>(cols), qw); break;
            case IQuant::IQ1_S: quantize_row_iq1_s_impl(xr, yr, cols, qw); break;
            case IQuant::IQ1_M: quantize_row_iq1_m_impl(xr, yr, cols, qw); break;
            case IQuant::TQ1_0: quantize_row_tq1_0_ref(xr, yr, cols); break;
            case IQuant::TQ2_0: quantize_row_tq2_0_ref(xr, yr, cols); break;
        }
    }
    return out;
}

std::vector<uint16_t> iquant_reference_neighbours(Lattice lattice, int u) {
    const IqTables& T = tables(lattice);
    if (u < 0 || u >= static_cast<int>(T.map.size())) return {};
    if (T.dims == 8)  // never formed: a level of 3 (its map entry is an unfilled -1)
        for (int k = 0; k < 8; ++k)
            if (((u >> 2 * k) & 3) > 2) return {};
    const int m = T.map[static_cast<size_t>(u)];
    if (m >= 0) return {};
    const uint16_t* list = T.neighbours.data() + (-m - 1);
    return std::vector<uint16_t>(list + 1, list + 1 + list[0]);
}

std::vector<float> iquant_dequantize(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, IQuant t) {
    const int64_t bb = iquant_block_bytes(t), nblocks = rows * (cols / QK_K);
    std::vector<float> out(static_cast<size_t>(rows * cols));
    auto signs_of = [](int i) { return iquant::ksigns_iq2xs(i); };
    for (int64_t b = 0; b < nblocks; ++b) {
        const uint8_t* x = bytes.data() + b * bb;
        float* y = out.data() + b * QK_K;
        switch (t) {
            case IQuant::IQ2_XXS: {  // dequantize_row_iq2_xxs
                const uint64_t* grid_table = iquant::grid8(Lattice::IQ2_XXS);
                const float d = get_fp16(x);
                for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
                    const uint32_t aux0 = get_u32(x + 2 + 8 * ib32), aux1 = get_u32(x + 6 + 8 * ib32);
                    const float db = d * (0.5f + (aux1 >> 28)) * 0.25f;
                    for (int l = 0; l < 4; ++l) {
                        const uint64_t g = grid_table[(aux0 >> 8 * l) & 255];
                        const uint8_t signs = signs_of((aux1 >> 7 * l) & 127);
                        for (int j = 0; j < 8; ++j) y[j] = db * static_cast<uint8_t>(g >> 8 * j) * (signs & (1 << j) ? -1.f : 1.f);
                        y += 8;
                    }
                }
                break;
            }
            case IQuant::IQ2_XS: {  // dequantize_row_iq2_xs
                const uint64_t* grid_table = iquant::grid8(Lattice::IQ2_XS);
                const float d = get_fp16(x);
                float db[2];
                for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
                    db[0] = d * (0.5f + (x[66 + ib32] & 0xf)) * 0.25f;
                    db[1] = d * (0.5f + (x[66 + ib32] >> 4)) * 0.25f;
                    for (int l = 0; l < 4; ++l) {
                        const uint32_t q = get_u16(x + 2 + 2 * (4 * ib32 + l));
                        const uint64_t g = grid_table[q & 511];
                        const uint8_t signs = signs_of(static_cast<int>(q >> 9));
                        for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * static_cast<uint8_t>(g >> 8 * j) * (signs & (1 << j) ? -1.f : 1.f);
                        y += 8;
                    }
                }
                break;
            }
            case IQuant::IQ2_S: {  // dequantize_row_iq2_s
                const uint64_t* grid_table = iquant::grid8(Lattice::IQ2_S);
                const float d = get_fp16(x);
                const uint8_t* qs = x + 2;
                const uint8_t* qh = x + 66;
                const uint8_t* signs = qs + QK_K / 8;
                float db[2];
                for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
                    db[0] = d * (0.5f + (x[74 + ib32] & 0xf)) * 0.25f;
                    db[1] = d * (0.5f + (x[74 + ib32] >> 4)) * 0.25f;
                    for (int l = 0; l < 4; ++l) {
                        const float dl = db[l / 2];
                        const uint64_t g = grid_table[qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300)];
                        for (int j = 0; j < 8; ++j) y[j] = dl * static_cast<uint8_t>(g >> 8 * j) * (signs[l] & (1 << j) ? -1.f : 1.f);
                        y += 8;
                    }
                    qs += 4;
                    signs += 4;
                }
                break;
            }
            case IQuant::IQ3_XXS: {  // dequantize_row_iq3_xxs
                const uint32_t* grid_table = iquant::grid4(Lattice::IQ3_XXS);
                const float d = get_fp16(x);
                const uint8_t* qs = x + 2;
                const uint8_t* scales_and_signs = qs + QK_K / 4;
                for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
                    const uint32_t aux32 = get_u32(scales_and_signs + 4 * ib32);
                    const float db = d * (0.5f + (aux32 >> 28)) * 0.5f;
                    for (int l = 0; l < 4; ++l) {
                        const uint8_t signs = signs_of((aux32 >> 7 * l) & 127);
                        const uint32_t g1 = grid_table[qs[2 * l + 0]], g2 = grid_table[qs[2 * l + 1]];
                        for (int j = 0; j < 4; ++j) {
                            y[j + 0] = db * static_cast<uint8_t>(g1 >> 8 * j) * (signs & (1 << j) ? -1.f : 1.f);
                            y[j + 4] = db * static_cast<uint8_t>(g2 >> 8 * j) * (signs & (1 << (j + 4)) ? -1.f : 1.f);
                        }
                        y += 8;
                    }
                    qs += 8;
                }
                break;
            }
            case IQuant::IQ3_S: {  // dequantize_row_iq3_s
                const uint32_t* grid_table = iquant::grid4(Lattice::IQ3_S);
                const float d = get_fp16(x);
                const uint8_t* qs = x + 2;
                const uint8_t* qh = x + 66;
                const uint8_t* signs = x + 74;
                for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2) {
                    const float db1 = d * (1 + 2 * (x[106 + ib32 / 2] & 0xf));
                    const float db2 = d * (1 + 2 * (x[106 + ib32 / 2] >> 4));
                    for (int half = 0; half < 2; ++half) {
                        const float db = half ? db2 : db1;
                        for (int l = 0; l < 4; ++l) {
                            const uint32_t g1 = grid_table[qs[2 * l + 0] | ((qh[half] << (8 - 2 * l)) & 256)];
                            const uint32_t g2 = grid_table[qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256)];
                            for (int j = 0; j < 4; ++j) {
                                y[j + 0] = db * static_cast<uint8_t>(g1 >> 8 * j) * (signs[l] & (1 << j) ? -1.f : 1.f);
                                y[j + 4] = db * static_cast<uint8_t>(g2 >> 8 * j) * (signs[l] & (1 << (j + 4)) ? -1.f : 1.f);
                            }
                            y += 8;
                        }
                        qs += 8;
                        signs += 4;
                    }
                    qh += 2;
                }
                break;
            }
            case IQuant::IQ1_S: {  // dequantize_row_iq1_s
                const uint64_t* grid_table = iquant::grid8(Lattice::IQ1_S);
                const float d = get_fp16(x);
                const uint8_t* qs = x + 2;
                for (int ib = 0; ib < QK_K / 32; ++ib) {
                    const uint32_t qh = get_u16(x + 34 + 2 * ib);
                    const float dl = d * (2 * ((qh >> 12) & 7) + 1);
                    const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
                    for (int l = 0; l < 4; ++l) {
                        const uint64_t g = grid_table[qs[l] | (((qh >> 3 * l) & 7) << 8)];
                        for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<int8_t>(g >> 8 * j) + delta);
                        y += 8;
                    }
                    qs += 4;
                }
                break;
            }
            case IQuant::IQ1_M: {  // dequantize_row_iq1_m
                const uint64_t* grid_table = iquant::grid8(Lattice::IQ1_S);
                uint32_t sc[4];
                for (int k = 0; k < 4; ++k) sc[k] = get_u16(x + 48 + 2 * k);
                const uint16_t scale_u16 =
                    static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
                const float d = fp16_to_fp32(scale_u16);
                const uint8_t* qs = x;
                const uint8_t* qh = x + 32;
                float delta[4];
                uint16_t idx[4];
                for (int ib = 0; ib < QK_K / 32; ++ib) {
                    const float dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
                    const float dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
                    idx[0] = static_cast<uint16_t>(qs[0] | ((qh[0] << 8) & 0x700));
                    idx[1] = static_cast<uint16_t>(qs[1] | ((qh[0] << 4) & 0x700));
                    idx[2] = static_cast<uint16_t>(qs[2] | ((qh[1] << 8) & 0x700));
                    idx[3] = static_cast<uint16_t>(qs[3] | ((qh[1] << 4) & 0x700));
                    delta[0] = qh[0] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA;
                    delta[1] = qh[0] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA;
                    delta[2] = qh[1] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA;
                    delta[3] = qh[1] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA;
                    for (int l = 0; l < 4; ++l) {
                        const uint64_t g = grid_table[idx[l]];
                        const float dl = l < 2 ? dl1 : dl2;
                        for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<int8_t>(g >> 8 * j) + delta[l]);
                        y += 8;
                    }
                    qs += 4;
                    qh += 2;
                }
                break;
            }
            case IQuant::TQ1_0: {  // dequantize_row_tq1_0
                const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
                const float d = get_fp16(x + 52);
                for (size_t j = 0; j < 32; j += 32)
                    for (size_t nn = 0; nn < 5; ++nn)
                        for (size_t m = 0; m < 32; ++m) {
                            const uint8_t q = static_cast<uint8_t>(x[j + m] * pow3[nn]);
                            const int16_t xi = static_cast<int16_t>((static_cast<uint16_t>(q) * 3) >> 8);
                            *y++ = static_cast<float>(xi - 1) * d;
                        }
                for (size_t j = 32; j < 48; j += 16)
                    for (size_t nn = 0; nn < 5; ++nn)
                        for (size_t m = 0; m < 16; ++m) {
                            const uint8_t q = static_cast<uint8_t>(x[j + m] * pow3[nn]);
                            const int16_t xi = static_cast<int16_t>((static_cast<uint16_t>(q) * 3) >> 8);
                            *y++ = static_cast<float>(xi - 1) * d;
                        }
                for (size_t nn = 0; nn < 4; ++nn)
                    for (size_t j = 0; j < 4; ++j) {
                        const uint8_t q = static_cast<uint8_t>(x[48 + j] * pow3[nn]);
                        const int16_t xi = static_cast<int16_t>((static_cast<uint16_t>(q) * 3) >> 8);
                        *y++ = static_cast<float>(xi - 1) * d;
                    }
                break;
            }
            case IQuant::TQ2_0: {  // dequantize_row_tq2_0
                const float d = get_fp16(x + 64);
                for (size_t j = 0; j < 64; j += 32)
                    for (size_t l = 0; l < 4; ++l)
                        for (size_t m = 0; m < 32; ++m) {
                            const int8_t q = static_cast<int8_t>((x[j + m] >> (l * 2)) & 3);
                            *y++ = static_cast<float>(q - 1) * d;
                        }
                break;
            }
        }
    }
    return out;
}

}  // namespace ql::kernels::reference
