// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF block formats on the device: the block encoders and decoders of kernels/gguf_block_codec.h,
// gguf_kquant_codec.h and gguf_importance_codec.h (the CPU kernels' own), one thread per
// 32-element block, K-quant super-block or group of 8 IQ4_NL blocks. The log2 threshold table behind
// MXFP4's floor(log2f) is the CPU's host table, copied once per device.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/gguf_block_codec.h"
#include "kernels/gguf_importance_codec.h"
#include "kernels/gguf_kquant_codec.h"

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

// ---- K-quants and IQ4 ----------------------------------------------------------------------

// The encoder of one K-quant block (group) compiled once per type and called by both kernels
// below: inlining the whole search into each kernel doubles the (long) device compile for no
// measurable gain.
template <GgufType T>
__device__ __noinline__ void encode_kquant_once(const float* x, const float* qw, uint8_t* y, int count) {
    kquant::encode_kquant<T>(x, qw, y, count);
}

// One thread per group of G blocks of E elements (G = 8 for IQ4_NL, else 1), as
// kquant_encode_range on the CPU; with importance a group never crosses a row end.
template <GgufType T>
__global__ void __launch_bounds__(kThreads) kquant_quantize_kernel(const float* x, int64_t groups, int64_t bpr,
                                                                    const float* importance, uint8_t* out) {
    constexpr int E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    constexpr int G = T == GgufType::IQ4_NL ? 8 : 1;
    const int64_t gpr = (bpr + G - 1) / G;  // groups per row
    for (int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; g < groups;
         g += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t row = g / gpr, first = (g - row * gpr) * G;
        const int64_t count = bpr - first < G ? bpr - first : G;
        const int64_t b = row * bpr + first;
        encode_kquant_once<T>(x + b * E, importance ? importance + first * E : nullptr, out + b * B, static_cast<int>(count));
    }
}

template <GgufType T>
__global__ void __launch_bounds__(kThreads) kquant_dequantize_kernel(const uint8_t* in, int64_t nblocks, float* y) {
    constexpr int E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads)
        kquant::decode_kquant<T>(in + b * B, y + b * E);
}

// As kquant_fake_units on the CPU: unit u is group u % upr of row u / upr.
template <GgufType T>
__global__ void __launch_bounds__(kThreads) kquant_fake_kernel(const float* x, float* y, int64_t cols, int64_t units,
                                                                const float* importance) {
    constexpr int E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    constexpr int G = T == GgufType::IQ4_NL ? 8 : 1;
    const int64_t upr = ((cols + E - 1) / E + G - 1) / G;
    for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < units;
         u += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t r = u / upr, first = (u - r * upr) * E * G;
        const int64_t len = cols - first < E * G ? cols - first : E * G;
        const int count = static_cast<int>((len + E - 1) / E);
        const float* xr = x + r * cols + first;
        float in[E * G], qw[E * G], dec[E * G];
        uint8_t bytes[B * G];
        for (int i = 0; i < E * G; ++i) {
            in[i] = i < len ? xr[i] : 0.0f;
            qw[i] = importance && i < len ? importance[first + i] : 0.0f;
        }
        encode_kquant_once<T>(in, importance ? qw : nullptr, bytes, count);
        for (int k = 0; k < count; ++k) kquant::decode_kquant<T>(bytes + B * k, dec + E * k);
        float* yr = y + r * cols + first;
        for (int64_t i = 0; i < len; ++i) yr[i] = is_nan_bits(in[i]) ? in[i] : dec[i];
    }
}

// ggml's importance path of Q4_0 / Q4_1 / Q5_0: one thread per row (sigma2 is the row's).
template <GgufType T>
__global__ void __launch_bounds__(kThreads) weighted_rows_kernel(const float* x, int64_t rows, int64_t n,
                                                                  const float* importance, uint8_t* out) {
    constexpr int B = kquant::weighted_block_bytes(T);
    const int64_t bpr = n / kB;
    for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < rows;
         r += static_cast<int64_t>(gridDim.x) * kThreads) {
        const float* xr = x + r * n;
        const float sigma2 = kquant::row_sigma2(xr, n);
        for (int64_t b = 0; b < bpr; b += 8) {
            const int count = static_cast<int>(bpr - b < 8 ? bpr - b : 8);
            kquant::encode_weighted_x8<T>(xr + b * kB, importance + b * kB, sigma2, out + (r * bpr + b) * B, count);
        }
    }
}

template <class Visitor>
void with_kquant_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q2_K: v(std::integral_constant<GgufType, GgufType::Q2_K>{}); return;
        case GgufType::Q3_K: v(std::integral_constant<GgufType, GgufType::Q3_K>{}); return;
        case GgufType::Q4_K: v(std::integral_constant<GgufType, GgufType::Q4_K>{}); return;
        case GgufType::Q5_K: v(std::integral_constant<GgufType, GgufType::Q5_K>{}); return;
        case GgufType::Q6_K: v(std::integral_constant<GgufType, GgufType::Q6_K>{}); return;
        case GgufType::IQ4_NL: v(std::integral_constant<GgufType, GgufType::IQ4_NL>{}); return;
        case GgufType::IQ4_XS: v(std::integral_constant<GgufType, GgufType::IQ4_XS>{}); return;
        default: invalid("not a K-quant / IQ4 type");
    }
}

template <class Visitor>
void with_weighted_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q4_0: v(std::integral_constant<GgufType, GgufType::Q4_0>{}); return;
        case GgufType::Q4_1: v(std::integral_constant<GgufType, GgufType::Q4_1>{}); return;
        case GgufType::Q5_0: v(std::integral_constant<GgufType, GgufType::Q5_0>{}); return;
        default: invalid("no importance path for this GGUF type");
    }
}

bool is_kquant(GgufType t) { return t >= GgufType::Q2_K && t <= GgufType::IQ4_XS; }

__global__ void pad_rows_kernel(const float* x, int64_t rows, int64_t cols, int64_t n, float* out) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < rows * n;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t r = i / n, c = i - r * n;
        out[i] = c < cols ? x[r * cols + c] : 0.0f;
    }
}

__global__ void unpad_rows_kernel(const float* dec, const float* x, int64_t rows, int64_t cols, int64_t n, float* y) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < rows * cols;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t r = i / cols, c = i - r * cols;
        const float v = x[i];
        y[i] = is_nan_bits(v) ? v : dec[r * n + c];
    }
}

// [rows, cols] -> [rows, n] with zeros past cols, and back (NaN inputs kept).
void pad_rows(const float* x, int64_t rows, int64_t cols, int64_t n, float* out, void* stream) {
    launch("gguf_fake_quant", &pad_rows_kernel, grid_for(rows * n, kThreads), stream, x, rows, cols, n, out);
}
void unpad_rows_keep_nan(const float* dec, const float* x, int64_t rows, int64_t cols, int64_t n, float* y, void* stream) {
    launch("gguf_fake_quant", &unpad_rows_kernel, grid_for(rows * cols, kThreads), stream, dec, x, rows, cols, n, y);
}

template <class Visitor>
void with_type(GgufType t, const Visitor& v) {
    if (!visit_gguf_type(t, v)) invalid("unknown GGUF type");
}

// The i-quants' lattice searches have CPU kernels only (gguf_iquant_cpu.h): callers make a round
// trip through them (engine/formats/format_codec.cpp).
void require_cuda_kernel(GgufType t) {
    if (gguf_is_iquant(t)) invalid("the GGUF i-quants and ternary types have no CUDA kernels (use the CPU kernels)");
}

void require_whole_blocks(int64_t cols, int64_t block) {
    if (cols % block != 0)
        invalid("GGUF rows must be a multiple of " + std::to_string(block) + " elements, got " + std::to_string(cols) +
                " columns");
}

}  // namespace

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, void* stream) {
    gguf_quantize(x, rows, cols, t, blocks, nullptr, stream);
}

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance,
                   void* stream) {
    require_cuda_kernel(t);
    const int64_t E = gguf_block_elements(t);
    require_whole_blocks(cols, E);
    const int64_t nb = rows * (cols / E);
    if (nb <= 0) return;
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (is_kquant(t)) {
        const int64_t G = t == GgufType::IQ4_NL ? 8 : 1, bpr = cols / E;
        const int64_t groups = rows * ((bpr + G - 1) / G);
        with_kquant_type(t, [&](auto type) {
            launch("gguf_quantize", &kquant_quantize_kernel<decltype(type)::value>, grid_for(groups, kThreads), stream, x,
                   groups, bpr, importance, blocks);
        });
        return;
    }
    if (importance) {
        with_weighted_type(t, [&](auto type) {
            launch("gguf_quantize", &weighted_rows_kernel<decltype(type)::value>, grid_for(rows, kThreads), stream, x, rows,
                   cols, importance, blocks);
        });
        return;
    }
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_quantize", &quantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, nb, blocks);
    });
}

void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y, void* stream) {
    require_cuda_kernel(t);
    const int64_t E = gguf_block_elements(t);
    require_whole_blocks(cols, E);
    const int64_t nb = rows * (cols / E);
    if (nb <= 0) return;
    if (is_kquant(t)) {
        with_kquant_type(t, [&](auto type) {
            launch("gguf_dequantize", &kquant_dequantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream,
                   blocks, nb, y);
        });
        return;
    }
    with_type(t, [&](auto type) {
        launch("gguf_dequantize", &dequantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, blocks,
               nb, y);
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, void* stream) {
    gguf_fake_quant(x, y, L, t, nullptr, stream);
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance, void* stream) {
    require_cuda_kernel(t);
    const int64_t E = gguf_block_elements(t);
    if (L.block != E)
        invalid("GGUF blocks of this type are " + std::to_string(E) + " elements, got L.block = " + std::to_string(L.block));
    const int64_t nb = L.block_count();
    if (nb <= 0 || L.elements() == 0) return;
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (is_kquant(t)) {
        const int64_t G = t == GgufType::IQ4_NL ? 8 : 1;
        const int64_t units = L.rows * ((L.blocks_per_row() + G - 1) / G);
        with_kquant_type(t, [&](auto type) {
            launch("gguf_fake_quant", &kquant_fake_kernel<decltype(type)::value>, grid_for(units, kThreads), stream, x, y,
                   L.cols, units, importance);
        });
        return;
    }
    if (importance) {
        // Rows padded to whole blocks (importance 0 past the end), quantized, then decoded.
        const int64_t n = L.blocks_per_row() * kB;
        const DeviceArray<float> padded(L.rows * n, stream), qw(n, stream), dec(L.rows * n, stream);
        with_weighted_type(t, [&](auto type) {
            constexpr GgufType T = decltype(type)::value;
            const DeviceArray<uint8_t> bytes(L.rows * (n / kB) * block_bytes(T), stream);
            pad_rows(x, L.rows, L.cols, n, padded.data(), stream);
            pad_rows(importance, 1, L.cols, n, qw.data(), stream);
            launch("gguf_fake_quant", &weighted_rows_kernel<T>, grid_for(L.rows, kThreads), stream, padded.data(), L.rows,
                   n, qw.data(), bytes.data());
            const int64_t blocks = L.rows * (n / kB);
            launch("gguf_fake_quant", &dequantize_kernel<T>, grid_for(blocks, kThreads), stream, bytes.data(), blocks,
                   dec.data());
            unpad_rows_keep_nan(dec.data(), x, L.rows, L.cols, n, y, stream);
        });
        return;
    }
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_fake_quant", &fake_quant_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, y,
               RowGeometry::of(L.cols, L.block), nb);
    });
}

}  // namespace ql::kernels::cuda
