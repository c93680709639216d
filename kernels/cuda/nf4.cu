// SPDX-License-Identifier: GPL-3.0-or-later
// NF4 on the device with the CPU kernels' scaling and rounding (kernels/nf4_rounding.h). The
// codebook thresholds and the dynamic map are the CPU's host tables, copied once per device.
// Double quantization of the absmax vector (one float per 64 elements) runs on the host with the
// CPU function: it is tiny, and its ATen-order mean is inherently sequential.
#include <vector>

#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/nf4_rounding.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

// Uniform indices (every lane reads the same entry): constant memory broadcasts.
__constant__ float c_thresholds[15];
__constant__ float c_codebook[16];
// Per-lane indices (decoding): global memory through L1, no constant-cache serialisation.
__device__ float g_codebook[16];
__device__ float g_dynamic_map[256];

PerDeviceOnce tables_uploaded;

void upload_tables() {
    tables_uploaded.run([] {
        check(cudaMemcpyToSymbol(c_thresholds, ql::kernels::nf4_thresholds(), sizeof(c_thresholds)), "NF4 tables");
        check(cudaMemcpyToSymbol(c_codebook, ql::kernels::kNf4Codebook, sizeof(c_codebook)), "NF4 tables");
        check(cudaMemcpyToSymbol(g_codebook, ql::kernels::kNf4Codebook, sizeof(g_codebook)), "NF4 tables");
        check(cudaMemcpyToSymbol(g_dynamic_map, ql::kernels::kDynamicMapSigned, sizeof(g_dynamic_map)), "NF4 tables");
    });
}

struct FakeOp {
    float* y;
    int64_t block_size;
    using Stat = FiniteAbsmax;
    using Block = BlockwiseScale;
    QL_DEV static float fake(float v, const BlockwiseScale& k) {
        return nf4_fake_element(v, k, c_thresholds, c_codebook);
    }
    QL_DEV BlockwiseScale block(const Stat& st, int64_t, int64_t len, bool) const {
        return blockwise_scale(st.value(), len < block_size);
    }
    QL_DEV void elements4(int64_t i, float4 v, const BlockwiseScale& k) const {
        *reinterpret_cast<float4*>(y + i) = make_float4(fake(v.x, k), fake(v.y, k), fake(v.z, k), fake(v.w, k));
    }
    QL_DEV void element(int64_t i, float v, const BlockwiseScale& k) const { y[i] = fake(v, k); }
};

struct EncodeOp {
    uint8_t* codes;
    float* absmax;
    int64_t block_size;
    using Stat = FiniteAbsmax;
    using Block = BlockwiseScale;
    QL_DEV static uint8_t code(float v, const BlockwiseScale& k) { return nf4_code_element(v, k, c_thresholds); }
    QL_DEV BlockwiseScale block(const Stat& st, int64_t b, int64_t len, bool leader) const {
        const BlockwiseScale k = blockwise_scale(st.value(), len < block_size);
        if (leader) absmax[b] = k.absmax;
        return k;
    }
    QL_DEV void elements4(int64_t i, float4 v, const BlockwiseScale& k) const {
        *reinterpret_cast<uchar4*>(codes + i) = make_uchar4(code(v.x, k), code(v.y, k), code(v.z, k), code(v.w, k));
    }
    QL_DEV void element(int64_t i, float v, const BlockwiseScale& k) const { codes[i] = code(v, k); }
};

struct DecodeOp {
    const float* absmax;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_DEV float param(int64_t b) const { return absmax[b]; }
    QL_DEV float apply(uint8_t c, float am) const { return nf4_decode_element(c, am, g_codebook); }
};

// nf4.cpp nf4_fake_quant_double's decode followed by its NaN restore, in one pass.
__global__ void __launch_bounds__(kThreads) decode_keep_nan_kernel(const float* x, const uint8_t* codes,
                                                                   const float* absmax, int64_t n, int64_t block,
                                                                   float* y) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const float v = x[i];
        const float d = nf4_decode_element(codes[i], absmax[i / block], g_codebook);
        y[i] = is_nan_bits(v) ? v : d;
    }
}

__global__ void __launch_bounds__(kThreads) double_dequant_kernel(const uint8_t* codes8, const float* absmax2,
                                                                  float offset, int64_t nblocks, float* out) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < nblocks;
         i += static_cast<int64_t>(gridDim.x) * kThreads)
        out[i] = dynamic_map_decode(codes8[i], absmax2[i / kNf4DoubleQuantBlock], offset, g_dynamic_map);
}

void require_block(int64_t block) {
    if (block <= 0) invalid("NF4 block size must be positive, got " + std::to_string(block));
}

}  // namespace

void nf4_fake_quant(const float* x, float* y, int64_t n, int64_t block, void* stream) {
    require_block(block);
    upload_tables();
    run_blocks<kNf4Block, 32>("nf4_fake_quant", FakeOp{y, block}, x, RowBlocks{1, n, block}, aligned(y, 16), stream);
}

void nf4_encode(const float* x, int64_t n, int64_t block, uint8_t* codes, float* absmax, void* stream) {
    require_block(block);
    upload_tables();
    run_blocks<kNf4Block, 32>("nf4_encode", EncodeOp{codes, absmax, block}, x, RowBlocks{1, n, block},
                              aligned(codes, 4), stream);
}

void nf4_decode(const uint8_t* codes, const float* absmax, int64_t n, int64_t block, float* y, void* stream) {
    require_block(block);
    upload_tables();
    run_block_map<kNf4Block>("nf4_decode", DecodeOp{absmax}, RowBlocks{1, n, block}, codes, y, stream);
}

void nf4_double_quant(const float* absmax, int64_t nblocks, uint8_t* codes8, float* absmax2, float* offset_host,
                      void* stream) {
    if (nblocks <= 0) {
        *offset_host = 0.0f;
        return;
    }
    const cudaStream_t s = as_stream(stream);
    const int64_t nb2 = (nblocks + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock;
    std::vector<float> am(static_cast<size_t>(nblocks)), am2(static_cast<size_t>(nb2));
    std::vector<uint8_t> c8(static_cast<size_t>(nblocks));
    check(cudaMemcpyAsync(am.data(), absmax, am.size() * sizeof(float), cudaMemcpyDeviceToHost, s), "nf4_double_quant");
    check(cudaStreamSynchronize(s), "nf4_double_quant");
    ql::kernels::nf4_double_quant(am.data(), nblocks, c8.data(), am2.data(), offset_host);
    check(cudaMemcpyAsync(codes8, c8.data(), c8.size(), cudaMemcpyHostToDevice, s), "nf4_double_quant");
    check(cudaMemcpyAsync(absmax2, am2.data(), am2.size() * sizeof(float), cudaMemcpyHostToDevice, s),
          "nf4_double_quant");
    check(cudaStreamSynchronize(s), "nf4_double_quant");  // the host vectors die here
}

void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks, float* absmax_out,
                        void* stream) {
    if (nblocks <= 0) return;
    upload_tables();
    launch("nf4_double_dequant", &double_dequant_kernel, grid_for(nblocks, kThreads), stream, codes8, absmax2, offset,
           nblocks, absmax_out);
}

void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block, void* stream) {
    require_block(block);
    if (n <= 0) return;
    upload_tables();
    const int64_t nb = (n + block - 1) / block;
    const int64_t nb2 = (nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock;
    const DeviceArray<uint8_t> codes(n, stream), codes8(nb, stream);
    const DeviceArray<float> absmax(nb, stream), absmax_dq(nb, stream), absmax2(nb2, stream);
    nf4_encode(x, n, block, codes.data(), absmax.data(), stream);
    float offset = 0.0f;
    nf4_double_quant(absmax.data(), nb, codes8.data(), absmax2.data(), &offset, stream);
    nf4_double_dequant(codes8.data(), absmax2.data(), offset, nb, absmax_dq.data(), stream);
    const uint8_t* c = codes.data();
    const float* am = absmax_dq.data();
    launch("nf4_fake_quant_double", &decode_keep_nan_kernel, grid_for(n, kThreads), stream, x, c, am, n, block, y);
}

}  // namespace ql::kernels::cuda
