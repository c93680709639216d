// SPDX-License-Identifier: GPL-3.0-or-later
// How a kernel sees a contiguous float32 buffer. Kernels take raw pointers and one of these;
// the caller owns every buffer and sizes it as documented on each kernel.
#pragma once

#include <cstdint>

namespace ql::kernels {

// A row-major [rows, cols] buffer cut into blocks of `block` contiguous elements along each
// row. A row whose length is not a multiple of `block` ends with a short block: it behaves as if
// padded with zeros (zeros never change a block's amax), and no codes exist for the padding.
struct RowBlocks {
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t block = 1;

    int64_t blocks_per_row() const { return (cols + block - 1) / block; }
    int64_t block_count() const { return rows * blocks_per_row(); }
    int64_t elements() const { return rows * cols; }
    bool divisible() const { return cols % block == 0; }
};

// A buffer viewed as [outer, channels, inner] (row-major) for per-channel scaling along one
// axis: element i belongs to channel (i / inner) % channels. Per-tensor is channels == 1.
struct ChannelLayout {
    int64_t outer = 1;
    int64_t channels = 1;
    int64_t inner = 1;

    int64_t elements() const { return outer * channels * inner; }
};

}  // namespace ql::kernels
