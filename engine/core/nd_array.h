// SPDX-License-Identifier: GPL-3.0-or-later
// A plain n-dimensional array (row-major bytes plus dtype and shape): what crosses the facade
// between the engine and the CLI/GUI, and what .npy files hold. Plain shared header (engine/core).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ql {

enum class DType { Float32, Float16, BFloat16, UInt8, Int8, Int32, Int64, UInt16, UInt32 };

// Size of one element in bytes.
int dtype_size(DType d);
// numpy's descr for the dtype ("<f4", "|u1", ...); BFloat16 has none and is written as "<u2".
std::string dtype_npy_descr(DType d);
std::string dtype_name(DType d);

struct NdArray {
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;  // numel * dtype_size bytes, C order

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    template <class T>
    const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
    template <class T>
    T* as() { return reinterpret_cast<T*>(bytes.data()); }

    static NdArray zeros(DType d, std::vector<int64_t> shape) {
        NdArray a;
        a.dtype = d;
        a.shape = std::move(shape);
        a.bytes.assign(static_cast<size_t>(a.numel() * dtype_size(d)), 0);
        return a;
    }
    static NdArray from_floats(const std::vector<float>& v, std::vector<int64_t> shape) {
        NdArray a = zeros(DType::Float32, std::move(shape));
        if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), v.size() * sizeof(float));
        return a;
    }
    std::vector<float> to_floats() const;  // Float32 only; throws otherwise
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace ql
