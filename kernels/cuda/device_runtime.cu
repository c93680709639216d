// SPDX-License-Identifier: GPL-3.0-or-later
// Device discovery and the small memory helpers of cuda_kernels.h.
#include "kernels/cuda/cuda_support.cuh"
#include "kernels/cuda_kernels.h"

namespace ql::kernels::cuda {

using detail::as_stream;
using detail::check;

bool cuda_device_available() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();  // no driver / no device: clear the error, report "none"
        return false;
    }
    return count > 0;
}

void* device_allocate(size_t bytes, void* stream) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    check(cudaMallocAsync(&p, bytes, as_stream(stream)), "cudaMallocAsync");
    return p;
}

void device_release(void* p, void* stream) noexcept {
    if (p) cudaFreeAsync(p, as_stream(stream));
}

void copy_to_device(void* dst, const void* src_host, size_t bytes, void* stream) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, as_stream(stream)), "copy_to_device");
    check(cudaStreamSynchronize(as_stream(stream)), "copy_to_device");
}

void copy_to_host(void* dst_host, const void* src, size_t bytes, void* stream) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)), "copy_to_host");
    check(cudaStreamSynchronize(as_stream(stream)), "copy_to_host");
}

void copy_on_device(void* dst, const void* src, size_t bytes, void* stream) {
    if (bytes == 0 || dst == src) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)), "copy_on_device");
}

}  // namespace ql::kernels::cuda
