// SPDX-License-Identifier: GPL-3.0-or-later
// FP8 with per-tensor / per-channel scales on the device with the CPU kernels' element ops
// (kernels/scaled_fp8_element.h).
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/scaled_fp8_element.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

__global__ void __launch_bounds__(kThreads)
    scales_kernel(const float* amax, int64_t n, float max_value, float* scales) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads)
        scales[i] = fp8_scale_of(amax[i], max_value);
}

}  // namespace

void fp8_scales_for_amax(const float* amax, int64_t channels, Fp8Kind k, float* scales, void* stream) {
    if (channels <= 0) return;
    launch("fp8_scales_for_amax", &scales_kernel, grid_for(channels, kThreads), stream, amax, channels,
           ql::kernels::fp8_max(k), scales);
}

void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k, void* stream) {
    visit_fp8_kind(k, [&](auto f) {
        run_channel_map("fp8_fake_quant", Fp8FakeOp<decltype(f)>{{scales}}, L, x, y, stream);
    });
}

void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes,
                void* stream) {
    visit_fp8_kind(k, [&](auto f) {
        run_channel_map("fp8_encode", Fp8EncodeOp<decltype(f)>{{scales}}, L, x, codes, stream);
    });
}

void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y,
                void* stream) {
    visit_fp8_kind(k, [&](auto f) {
        run_channel_map("fp8_decode", Fp8DecodeOp<decltype(f)>{{scales}}, L, codes, y, stream);
    });
}

}  // namespace ql::kernels::cuda
