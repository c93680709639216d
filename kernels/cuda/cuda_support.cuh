// SPDX-License-Identifier: GPL-3.0-or-later
// Shared plumbing of the CUDA kernels: error checks, launches, grid sizes, team reductions and
// the once-per-device upload of host tables.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/portable.h"

namespace ql::kernels::cuda::detail {

constexpr int kThreads = 256;  // threads per CUDA block in every kernel

// Device-only helpers (those reading __constant__ tables); QL_HD ones compile for both sides.
#define QL_DEV __device__ __forceinline__

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what) {
    throw std::runtime_error(std::string("ql::kernels::cuda: ") + what + ": " + cudaGetErrorString(e));
}

inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw_cuda(e, what);
}

[[noreturn]] inline void invalid(const std::string& what) {
    throw std::invalid_argument("ql::kernels::cuda: " + what);
}

// Grid size for `units` independent work items of which one CUDA block handles `per_block`
// per iteration of its grid-stride loop. Streaming kernels get one iteration per CUDA block up to
// 256 blocks per SM (many short waves: no long tail); the grid-stride loops take over beyond, and
// keep index arithmetic in 64 bits for huge tensors. Reductions ask for fewer blocks per SM so
// that each block accumulates longer before its one atomic.
inline unsigned grid_for(int64_t units, int64_t per_block, int64_t max_blocks_per_sm = 256) {
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    const int64_t want = (units + per_block - 1) / per_block;
    const int64_t cap = max_blocks_per_sm * (sms > 0 ? sms : 1);
    return static_cast<unsigned>(want < 1 ? 1 : (want > cap ? cap : want));
}

// kernel<<<blocks, kThreads, 0, stream>>>(args...), then the launch error, named.
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), unsigned blocks, void* stream, Args&&... args) {
    kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(std::forward<Args>(args)...);
    check(cudaGetLastError(), name);
}

QL_HD bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Runs `upload` once per CUDA device (constant memory is per device). The upload is synchronous
// (cudaMemcpyToSymbol, then a wait on the legacy stream) so kernels on any stream see the tables.
class PerDeviceOnce {
public:
    template <class Upload>
    void run(const Upload& upload) {
        int device = 0;
        check(cudaGetDevice(&device), "cudaGetDevice");
        std::lock_guard<std::mutex> lock(mutex_);
        if (done_.size() <= static_cast<size_t>(device)) done_.resize(static_cast<size_t>(device) + 1, 0);
        if (done_[static_cast<size_t>(device)]) return;
        upload();
        check(cudaStreamSynchronize(cudaStreamLegacy), "table upload");
        done_[static_cast<size_t>(device)] = 1;
    }

private:
    std::mutex mutex_;
    std::vector<char> done_;
};

// ---- Team reductions: TEAM consecutive lanes (a power of two dividing 32) combine values with
// butterfly shuffles; every lane of the warp must call them (the kernels' loops are uniform).
template <int TEAM, class T>
__device__ __forceinline__ T team_max(T v) {
#pragma unroll
    for (int o = TEAM / 2; o > 0; o /= 2) {
        const T w = __shfl_xor_sync(0xFFFFFFFFu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

template <int TEAM, class T>
__device__ __forceinline__ T team_min(T v) {
#pragma unroll
    for (int o = TEAM / 2; o > 0; o /= 2) {
        const T w = __shfl_xor_sync(0xFFFFFFFFu, v, o);
        v = w < v ? w : v;
    }
    return v;
}

}  // namespace ql::kernels::cuda::detail
