// SPDX-License-Identifier: GPL-3.0-or-later
// The i-quant quantizers' search tables, as ggml's iq2xs_init_impl / iq3xs_init_impl build them
// (ggml-quants.c, behind ggml_quantize_init): for every vector of level indices u the quantizer
// can form (8 coordinates of 2 bits, levels 0..2; or 4 coordinates of 3 bits), either the lattice
// point it is, or the list of points nearest to it: all points whose integer squared distance
// between positions 2 l + 1 is among the `neighbour_shells` smallest distances, ordered by
// (distance, point index), exactly ggml's qsort order. Built on first use, once per lattice
// (std::call_once: thread-safe, as ggml's critical section), over the OpenMP pool; never freed.
//
// Besides ggml's point indices, every list keeps its points' packed level indices (the lattice's
// uint16 point, widened to 32 bits and padded to a multiple of 8 with copies of its first point),
// so that one SIMD operation measures eight candidates (gguf_iquant_search.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/gguf_iquant_grids.h"

namespace ql::kernels::iquant {

struct NeighbourList {
    uint32_t first;  // into LatticeSearch::indices
    uint32_t count;  // candidates
    uint32_t padded; // count rounded up to a multiple of 8
    uint32_t packed; // into LatticeSearch::packed: `padded` packed points
};

struct LatticeSearch {
    const LatticeTable* table = nullptr;
    const int8_t* point_levels = nullptr;  // point_levels(): point k, coordinate c at [k * dims + c]
    // By u (coordinate c's level at bits [bits c, ...)): >= 0 the point index; < 0: -(list + 1).
    // Entries the quantizers never form (an 8-dimensional level of 3) hold INT32_MIN.
    std::vector<int32_t> map;
    std::vector<NeighbourList> lists;
    std::vector<uint16_t> indices;      // the lists' point indices, in ggml's order
    std::vector<int32_t> packed;        // the lists' points as packed level indices, padded
};

const LatticeSearch& lattice_search(Lattice l);

}  // namespace ql::kernels::iquant
