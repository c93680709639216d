// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/nd_array.h"

#include "engine/core/errors.h"

namespace ql {

int dtype_size(DType d) {
    switch (d) {
        case DType::Float32: return 4;
        case DType::Float16: return 2;
        case DType::BFloat16: return 2;
        case DType::UInt8: return 1;
        case DType::Int8: return 1;
        case DType::Int32: return 4;
        case DType::Int64: return 8;
        case DType::UInt16: return 2;
        case DType::UInt32: return 4;
    }
    return 1;
}

std::string dtype_npy_descr(DType d) {
    switch (d) {
        case DType::Float32: return "<f4";
        case DType::Float16: return "<f2";
        case DType::BFloat16: return "<u2";
        case DType::UInt8: return "|u1";
        case DType::Int8: return "|i1";
        case DType::Int32: return "<i4";
        case DType::Int64: return "<i8";
        case DType::UInt16: return "<u2";
        case DType::UInt32: return "<u4";
    }
    return "|u1";
}

std::string dtype_name(DType d) {
    switch (d) {
        case DType::Float32: return "float32";
        case DType::Float16: return "float16";
        case DType::BFloat16: return "bfloat16";
        case DType::UInt8: return "uint8";
        case DType::Int8: return "int8";
        case DType::Int32: return "int32";
        case DType::Int64: return "int64";
        case DType::UInt16: return "uint16";
        case DType::UInt32: return "uint32";
    }
    return "?";
}

std::vector<float> NdArray::to_floats() const {
    if (dtype != DType::Float32) throw UserError("expected a float32 array, got " + dtype_name(dtype));
    std::vector<float> v(static_cast<size_t>(numel()));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace ql
