// SPDX-License-Identifier: GPL-3.0-or-later
// The lattices ("grids") that define llama.cpp's i-quants: IQ2_XXS (256 points), IQ2_XS (512),
// IQ2_S (1024) and IQ1_S / IQ1_M (2048) in 8 dimensions, IQ3_XXS (256) and IQ3_S (512) in 4.
//
// Each point is stored as ggml's quantizer stores it: one level index l per coordinate, packed 2
// bits per coordinate (8-dimensional lattices) or 3 bits (4-dimensional ones) into a uint16
// (ggml/src/ggml-quants.c iq2xs_init_impl's kgrid_2bit_256 / kgrid_2bit_512 / kgrid_2bit_1024 /
// kgrid_1bit_2048 and iq3xs_init_impl's kgrid_256 / kgrid_512; MIT, llama.cpp as vendored by
// llama-cpp-python 0.3.36). The dequantizers' byte grids of ggml/src/ggml-common.h (iq2xxs_grid,
// iq2xs_grid, iq2s_grid, iq1s_grid, iq3xxs_grid, iq3s_grid: one byte per coordinate, coordinate c
// in byte c) are these points with each level index replaced by the lattice's level value
// (`levels` below): {8, 25, 43} for IQ2, {-1, 0, 1} for IQ1, {4, 12, ..., 52, 62} for IQ3_XXS,
// {1, 3, ..., 15} for IQ3_S. grid8() / grid4() expand them once; tests/peers checks every
// entry of every grid, and every sign pattern, against ggml's own dequantizer.
//
// ksigns_iq2xs[i] (ggml-common.h) is i with bit 7 set to the parity of i's 7 bits (an even
// number of minus signs per 8 values); kmask_iq2xs[j] is 1 << j.
#pragma once

#include <cstdint>

namespace ql::kernels::iquant {

enum class Lattice : uint8_t { IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ3_XXS, IQ3_S };

struct LatticeTable {
    const uint16_t* points;  // `size` points; coordinate c's level index at bits [bits c, bits c + bits)
    int size;                // points
    int dims;                // 8 or 4
    int bits;                // bits per coordinate in `points`: 2 or 3
    int levels_count;        // level indices in use: 3 (8-dimensional lattices) or 8
    int neighbour_shells;    // distinct distances the quantizer's neighbour lists keep (ggml's nwant)
    int8_t levels[8];        // the grid byte (ggml-common.h) of each level index
};

const LatticeTable& lattice_table(Lattice l);

// ggml-common.h's byte grids. grid8: IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S (bytes are int8 for IQ1_S);
// grid4: IQ3_XXS, IQ3_S. Built on first use (thread-safe), never freed.
const uint64_t* grid8(Lattice l);
const uint32_t* grid4(Lattice l);

// Point k's level indices, coordinate c at [k * dims + c]. Built on first use, never freed.
const int8_t* point_levels(Lattice l);

// ksigns_iq2xs[i] for i in 0..127.
inline uint8_t ksigns_iq2xs(int i) {
    const int parity = __builtin_parity(static_cast<unsigned>(i) & 127u);
    return static_cast<uint8_t>((i & 127) | (parity << 7));
}

// IQ1S_DELTA = IQ1M_DELTA (ggml-common.h): the shift every IQ1 grid value gets, + or -.
constexpr float kIq1Delta = 0.125f;

}  // namespace ql::kernels::iquant
