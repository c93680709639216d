// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF block formats on the device: the block encoders and decoders of kernels/gguf_block_codec.h
// (the CPU kernels' own), one thread per 32-element block. The log2 threshold table behind
// MXFP4's floor(log2f) is the CPU's host table, copied once per device.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/gguf_block_codec.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;
using namespace gguf_codec;

__constant__ float c_log2_thresholds[277];

PerDeviceOnce tables_uploaded;

void upload_tables() {
    tables_uploaded.run([] {
        check(cudaMemcpyToSymbol(c_log2_thresholds, ql::kernels::gguf_log2_round_up_thresholds(),
                                 sizeof(c_log2_thresholds)),
              "GGUF log2 table");
    });
}

template <GgufType T>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const float* x, int64_t nblocks, uint8_t* blocks) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads)
        encode_block<T>(x + b * kB, blocks + b * block_bytes(T), c_log2_thresholds);
}

template <GgufType T>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(const uint8_t* blocks, int64_t nblocks, float* y) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads)
        decode_block<T>(blocks + b * block_bytes(T), y + b * kB);
}

// gguf_blocks.cpp gguf_fake_quant: a short row tail is padded with zeros.
template <GgufType T>
__global__ void __launch_bounds__(kThreads) fake_quant_kernel(const float* x, float* y, RowGeometry g,
                                                              int64_t nblocks) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads) {
        int64_t off = 0, len = 0;
        g.locate(b, &off, &len);
        float pad[kB], out[kB];
        for (int i = 0; i < kB; ++i) pad[i] = i < len ? x[off + i] : 0.0f;
        fake_quant_block<T>(pad, out, c_log2_thresholds);
        for (int i = 0; i < len; ++i) y[off + i] = out[i];
    }
}

template <class Visitor>
void with_type(GgufType t, const Visitor& v) {
    if (!visit_gguf_type(t, v)) invalid("unknown GGUF type");
}

void require_whole_blocks(int64_t cols) {
    if (cols % kB != 0)
        invalid("GGUF rows must be a multiple of 32 elements, got " + std::to_string(cols) + " columns");
}

}  // namespace

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, void* stream) {
    require_whole_blocks(cols);
    const int64_t nb = rows * (cols / kB);
    if (nb <= 0) return;
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_quantize", &quantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, nb, blocks);
    });
}

void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y, void* stream) {
    require_whole_blocks(cols);
    const int64_t nb = rows * (cols / kB);
    if (nb <= 0) return;
    with_type(t, [&](auto type) {
        launch("gguf_dequantize", &dequantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, blocks,
               nb, y);
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, void* stream) {
    if (L.block != kGgufBlock) invalid("GGUF blocks are 32 elements, got L.block = " + std::to_string(L.block));
    const int64_t nb = L.block_count();
    if (nb <= 0 || L.elements() == 0) return;
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_fake_quant", &fake_quant_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, y,
               RowGeometry::of(L.cols, L.block), nb);
    });
}

}  // namespace ql::kernels::cuda
