// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers for the CUDA kernel tests: device buffers (RAII over cudaMalloc, with an optional
// element offset so that tests can hand the kernels deliberately misaligned pointers), inputs
// with the special values FORMATS.md names, and bit-level comparisons.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_kernels.h"
#include "tests/kernels/test_data.h"

namespace ql::test {

inline void cuda_ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Waits for the kernels and surfaces their faults.
inline void device_sync() { cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

// `count` elements of T in device memory starting `offset` elements into the allocation.
template <class T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t count, size_t offset = 0) : count_(count), offset_(offset) {
        cuda_ok(cudaMalloc(&base_, (count + offset + 1) * sizeof(T)), "cudaMalloc");
        // Garbage, not zeros: a kernel that forgets to write an element must fail the test.
        cuda_ok(cudaMemset(base_, 0xA5, (count + offset + 1) * sizeof(T)), "cudaMemset");
    }
    explicit DeviceBuffer(const std::vector<T>& host, size_t offset = 0) : DeviceBuffer(host.size(), offset) {
        cuda_ok(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { cudaFree(base_); }

    T* get() const { return static_cast<T*>(base_) + offset_; }
    std::vector<T> to_host() const {
        device_sync();
        std::vector<T> h(count_);
        cuda_ok(cudaMemcpy(h.data(), get(), count_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
        return h;
    }

private:
    void* base_ = nullptr;
    size_t count_;
    size_t offset_;
};

// mixed_tensor plus NaN, +-Inf, -0.0, the largest floats and subnormals at random positions
// (about one element in 50), and in row 5 one block-sized run of zeros holding a single Inf
// (where formats with a zero scale meet a non-finite value).
inline std::vector<float> tensor_with_specials(int64_t rows, int64_t cols, uint32_t seed) {
    std::vector<float> x = mixed_tensor(rows, cols, seed);
    std::mt19937 rng(seed * 7919u + 1u);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              -0.0f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                              std::numeric_limits<float>::denorm_min(), 1e-40f};
    std::uniform_int_distribution<int> pick(0, static_cast<int>(sizeof specials / sizeof specials[0]) - 1);
    std::uniform_int_distribution<int> every(0, 49);
    for (float& v : x)
        if (every(rng) == 0) v = specials[pick(rng)];
    if (rows > 5 && cols >= 64) {
        for (int64_t c = 0; c < 64; ++c) x[static_cast<size_t>(5 * cols + c)] = 0.0f;
        x[static_cast<size_t>(5 * cols + 3)] = std::numeric_limits<float>::infinity();
        x[static_cast<size_t>(5 * cols + 40)] = -std::numeric_limits<float>::infinity();
    }
    return x;
}

// decode(encode(x)) equals fake_quant(x) except where x is NaN (fake quantization keeps the NaN,
// the codes hold the format's NaN rule).
inline ::testing::AssertionResult decoded_equals_fake(const std::vector<float>& decoded, const std::vector<float>& fake,
                                                      const std::vector<float>& x) {
    std::vector<float> expected = fake;
    for (size_t i = 0; i < x.size() && i < expected.size(); ++i)
        if (std::isnan(x[i])) expected[i] = decoded[i];
    return same_values(decoded, expected);
}

}  // namespace ql::test
