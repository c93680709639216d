// SPDX-License-Identifier: GPL-3.0-or-later
// The block-diagonal normalized Walsh–Hadamard transform on the device (kernels/hadamard.h), with
// the CPU kernel's float operations in the CPU kernel's order: sign multiply, butterflies stage by
// stage, scale. Blocks up to kTile floats are transformed in shared memory, one tile of whole
// blocks per CUDA block; longer blocks run one kernel per stage in global memory.
#include "kernels/cuda/cuda_support.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/hadamard.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

constexpr int64_t kTile = 4096;  // floats of shared memory per CUDA block (16 KiB)

// Tiles of `tile` floats (whole Hadamard blocks; the last tile may be shorter, still whole
// blocks) of the flat n-float array; column of element i is i % cols.
__global__ void __launch_bounds__(kThreads) tile_kernel(const float* x, float* y, int64_t n, int64_t cols,
                                                        int64_t block, int64_t tile, const float* signs,
                                                        float scale) {
    __shared__ float v[kTile];
    const int64_t tiles = (n + tile - 1) / tile;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t base = t * tile;
        const int64_t len = n - base < tile ? n - base : tile;
        for (int64_t i = threadIdx.x; i < len; i += kThreads) {
            const float a = x[base + i];
            v[i] = signs ? a * signs[(base + i) % cols] : a;
        }
        __syncthreads();
        for (int64_t h = 1; h < block; h *= 2) {
            // Pair p -> element i with bit h clear; both ends lie in the same Hadamard block.
            for (int64_t p = threadIdx.x; p < len / 2; p += kThreads) {
                const int64_t i = (p / h) * 2 * h + (p % h);
                const float a = v[i], b = v[i + h];
                v[i] = a + b;
                v[i + h] = a - b;
            }
            __syncthreads();
        }
        for (int64_t i = threadIdx.x; i < len; i += kThreads) y[base + i] = v[i] * scale;
        __syncthreads();  // v is reused by the next tile
    }
}

__global__ void __launch_bounds__(kThreads) signs_kernel(const float* x, float* y, int64_t n, int64_t cols,
                                                         const float* signs) {
    for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads)
        y[i] = signs ? x[i] * signs[i % cols] : x[i];
}

__global__ void __launch_bounds__(kThreads) stage_kernel(float* y, int64_t pairs, int64_t h) {
    for (int64_t p = blockIdx.x * int64_t{kThreads} + threadIdx.x; p < pairs; p += int64_t{gridDim.x} * kThreads) {
        const int64_t i = (p / h) * 2 * h + (p % h);
        const float a = y[i], b = y[i + h];
        y[i] = a + b;
        y[i + h] = a - b;
    }
}

__global__ void __launch_bounds__(kThreads) scale_kernel(float* y, int64_t n, float scale) {
    for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads)
        y[i] = y[i] * scale;
}

}  // namespace

void hadamard_rows(const float* x, float* y, const HadamardLayout& L, const float* signs, void* stream) {
    try {
        check_hadamard_layout(L);
    } catch (const std::invalid_argument& e) {
        invalid(e.what());
    }
    const int64_t n = L.rows * L.cols;
    if (n == 0) return;
    const float scale = hadamard_scale(L.block);
    if (L.block <= kTile) {
        // A tile holds as many whole blocks as fit (at least one).
        const int64_t tile = (kTile / L.block) * L.block;
        launch("hadamard_rows", &tile_kernel, grid_for(n, tile), stream, x, y, n, L.cols, L.block, tile, signs, scale);
        return;
    }
    launch("hadamard_rows", &signs_kernel, grid_for(n, kThreads), stream, x, y, n, L.cols, signs);
    for (int64_t h = 1; h < L.block; h *= 2)
        launch("hadamard_rows", &stage_kernel, grid_for(n / 2, kThreads), stream, y, n / 2, h);
    launch("hadamard_rows", &scale_kernel, grid_for(n, kThreads), stream, y, n, scale);
}

}  // namespace ql::kernels::cuda
