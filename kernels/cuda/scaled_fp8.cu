// SPDX-License-Identifier: GPL-3.0-or-later
// FP8 with per-tensor / per-channel scales on the device: the arithmetic of
// kernels/scaled_fp8.cpp, operation for operation.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/minifloat.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

template <class F>
struct FakeOp {
    const float* scales;
    using In = float;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t c) const { return scales[c]; }
    QL_HD float apply(float v, float scale) const {
        const float q = round_to_grid<F>(abs_bits(v / scale)) * scale;
        return is_nan_bits(v) ? v : copy_sign_of(q, v);
    }
};

template <class F>
struct EncodeOp {
    const float* scales;
    using In = float;
    using Out = uint8_t;
    using Param = float;
    QL_HD float param(int64_t c) const { return scales[c]; }
    QL_HD uint8_t apply(float v, float scale) const { return static_cast<uint8_t>(encode_element<F>(v / scale)); }
};

template <class F>
struct DecodeOp {
    const float* scales;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t c) const { return scales[c]; }
    QL_HD float apply(uint8_t code, float scale) const { return decode_element<F>(code) * scale; }
};

// scaled_fp8.cpp fp8_scale_for_amax: amax / max, 1 where that is 0.
__global__ void __launch_bounds__(kThreads)
    scales_kernel(const float* amax, int64_t n, float max_value, float* scales) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const float s = amax[i] / max_value;
        scales[i] = s == 0.0f ? 1.0f : s;
    }
}

template <class Visitor>
void with_kind(Fp8Kind k, const Visitor& v) {
    if (k == Fp8Kind::E4M3)
        v(E4M3{});
    else
        v(E5M2{});
}

}  // namespace

void fp8_scales_for_amax(const float* amax, int64_t channels, Fp8Kind k, float* scales, void* stream) {
    if (channels <= 0) return;
    launch("fp8_scales_for_amax", &scales_kernel, grid_for(channels, kThreads), stream, amax, channels,
           ql::kernels::fp8_max(k), scales);
}

void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k, void* stream) {
    with_kind(k, [&](auto f) { run_channel_map("fp8_fake_quant", FakeOp<decltype(f)>{scales}, L, x, y, stream); });
}

void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes,
                void* stream) {
    with_kind(k, [&](auto f) { run_channel_map("fp8_encode", EncodeOp<decltype(f)>{scales}, L, x, codes, stream); });
}

void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y,
                void* stream) {
    with_kind(k, [&](auto f) { run_channel_map("fp8_decode", DecodeOp<decltype(f)>{scales}, L, codes, y, stream); });
}

}  // namespace ql::kernels::cuda
