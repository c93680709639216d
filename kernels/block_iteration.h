// SPDX-License-Identifier: GPL-3.0-or-later
// Walks the blocks of a RowBlocks buffer in parallel: whole rows of full blocks go to a range
// kernel (vectorised, one call per thread-chunk or row), the short tail block of each row to a
// tail kernel. Keeps integer division out of the per-block path.
#pragma once

#include "kernels/parallel.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels {

// full(first_block, block_count, element_offset): `block_count` consecutive full blocks
//   starting at element `element_offset`, whose global block indices start at first_block.
// tail(block_index, element_offset, length): one short block.
template <class Full, class Tail>
void for_each_block(const RowBlocks& L, const Full& full, const Tail& tail) {
    const int64_t bpr = L.blocks_per_row();
    const int64_t grain_elements = int64_t{1} << 15;
    if (L.divisible()) {
        const int64_t nb = L.block_count();
        parallel_ranges(nb, std::max<int64_t>(1, grain_elements / L.block), 1,
                        [&](int64_t b0, int64_t b1) { full(b0, b1 - b0, b0 * L.block); });
        return;
    }
    const int64_t full_per_row = L.cols / L.block;
    const int64_t tail_len = L.cols - full_per_row * L.block;
    parallel_ranges(L.rows, std::max<int64_t>(1, grain_elements / std::max<int64_t>(L.cols, 1)), 1,
                    [&](int64_t r0, int64_t r1) {
                        for (int64_t r = r0; r < r1; ++r) {
                            if (full_per_row > 0) full(r * bpr, full_per_row, r * L.cols);
                            tail(r * bpr + full_per_row, r * L.cols + full_per_row * L.block, tail_len);
                        }
                    });
}

// one(block_index, element_offset, length) for every block, full or short, one at a time.
template <class One>
void for_each_block_singly(const RowBlocks& L, const One& one) {
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            for (int64_t b = 0; b < n; ++b) one(b0 + b, off + b * L.block, L.block);
        },
        one);
}

}  // namespace ql::kernels
