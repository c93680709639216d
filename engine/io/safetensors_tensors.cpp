// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_tensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/isfinite.h>

#include <array>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "kernels/microscaling.h"
#include "kernels/minifloat.h"

namespace ql {
namespace {

[[noreturn]] void fail(const SafetensorsFile& file, const std::string& name, const std::string& what) {
    throw UserError(file.path() + ": tensor " + quoted_name(name) + ": " + what);
}

// A tensor over the mapping; the deleter holds the mapping's owner.
at::Tensor view(const TensorBytes& b, std::vector<int64_t> sizes, at::ScalarType type) {
    std::shared_ptr<const void> owner = b.owner;
    return at::from_blob(const_cast<uint8_t*>(b.data), sizes, [owner](void*) mutable { owner.reset(); },
                         at::TensorOptions().dtype(type));
}

template <class F>
std::array<float, 256> minifloat_table() {
    std::array<float, 256> t{};
    for (unsigned c = 0; c < 256; ++c) t[c] = kernels::decode_element<F>(c);
    return t;
}

}  // namespace

std::optional<at::ScalarType> torch_dtype_of(SafetensorsDtype d) {
    switch (d) {
        case SafetensorsDtype::BOOL: return at::kBool;
        case SafetensorsDtype::U8: return at::kByte;
        case SafetensorsDtype::I8: return at::kChar;
        case SafetensorsDtype::I16: return at::kShort;
        case SafetensorsDtype::I32: return at::kInt;
        case SafetensorsDtype::I64: return at::kLong;
        case SafetensorsDtype::F16: return at::kHalf;
        case SafetensorsDtype::BF16: return at::kBFloat16;
        case SafetensorsDtype::F32: return at::kFloat;
        case SafetensorsDtype::F64: return at::kDouble;
        case SafetensorsDtype::C64: return at::kComplexFloat;
        default: return std::nullopt;
    }
}

std::optional<SafetensorsDtype> safetensors_dtype_of(at::ScalarType t) {
    for (int i = 0; i <= static_cast<int>(SafetensorsDtype::U64); ++i) {
        const auto d = static_cast<SafetensorsDtype>(i);
        if (torch_dtype_of(d) == t) return d;
    }
    return std::nullopt;
}

namespace {

// The LibTorch dtype of a tensor, or a UserError pointing to the raw and float32 readers.
at::ScalarType torch_type(const SafetensorsFile& file, const SafetensorsFile::TensorInfo& info) {
    const auto type = torch_dtype_of(info.dtype);
    if (!type)
        fail(file, info.name, std::string("dtype ") + safetensors_dtype_name(info.dtype) +
                                  " has no LibTorch type; read it with safetensors_raw_tensor or load_float32");
    if (info.dtype == SafetensorsDtype::BOOL) {
        const TensorBytes b = file.bytes(info);
        for (uint64_t i = 0; i < b.size; ++i)
            if (b.data[i] > 1)
                fail(file, info.name, "BOOL element " + std::to_string(i) + " is byte " + std::to_string(b.data[i]) + ", not 0 or 1");
    }
    return *type;
}

// Single-threaded on purpose: the cost of a fresh copy is page faults on the new memory, and
// faulting from two threads contends on the address-space lock (measured 1.8x slower here).
at::Tensor owned_copy(const TensorBytes& b, const std::vector<int64_t>& shape, at::ScalarType type) {
    at::Tensor copy = at::empty(shape, at::TensorOptions().dtype(type));
    if (b.size) std::memcpy(copy.data_ptr(), b.data, b.size);
    return copy;
}

}  // namespace

at::Tensor safetensors_tensor(const SafetensorsFile& file, const std::string& name) {
    const auto& info = file.info(name);
    const at::ScalarType type = torch_type(file, info);
    const TensorBytes b = file.bytes(info);
    const auto item = static_cast<uintptr_t>(safetensors_dtype_bits(info.dtype) / 8);
    if (reinterpret_cast<uintptr_t>(b.data) % item != 0) return owned_copy(b, info.shape, type);
    return view(b, info.shape, type);
}

at::Tensor load_tensor(const SafetensorsFile& file, const std::string& name) {
    const auto& info = file.info(name);
    const at::ScalarType type = torch_type(file, info);
    return owned_copy(file.bytes(info), info.shape, type);
}

at::Tensor load_tensor(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
    return load_tensor(checkpoint.file_of(name), name);
}

at::Tensor safetensors_tensor(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
    return safetensors_tensor(checkpoint.file_of(name), name);
}

at::Tensor safetensors_raw_tensor(const SafetensorsFile& file, const std::string& name) {
    const auto& info = file.info(name);
    const TensorBytes b = file.bytes(info);
    if (safetensors_dtype_bits(info.dtype) == 8) return view(b, info.shape, at::kByte);
    return view(b, {static_cast<int64_t>(b.size)}, at::kByte);
}

at::Tensor load_float32(const SafetensorsFile& file, const std::string& name, bool require_finite) {
    const auto& info = file.info(name);
    const TensorBytes b = file.bytes(info);
    at::Tensor out;
    switch (info.dtype) {
        case SafetensorsDtype::F32:
            out = owned_copy(b, info.shape, at::kFloat);
            break;
        case SafetensorsDtype::BF16: {
            // bfloat16 is the top half of a float32: a shift, exact.
            out = at::empty(info.shape, at::TensorOptions().dtype(at::kFloat));
            uint32_t* dst = static_cast<uint32_t*>(out.data_ptr());
            for (uint64_t i = 0; i < b.size / 2; ++i) {
                uint16_t h;
                std::memcpy(&h, b.data + 2 * i, 2);  // the mapping may be unaligned in others' files
                dst[i] = static_cast<uint32_t>(h) << 16;
            }
            break;
        }
        case SafetensorsDtype::F16:
        case SafetensorsDtype::F64:
            out = safetensors_tensor(file, name).to(at::kFloat);
            break;
        case SafetensorsDtype::F8_E4M3:
        case SafetensorsDtype::F8_E5M2:
        case SafetensorsDtype::F8_E8M0: {
            static const auto e4m3 = minifloat_table<kernels::E4M3>();
            static const auto e5m2 = minifloat_table<kernels::E5M2>();
            static const auto e8m0 = [] {
                std::array<float, 256> t{};
                for (unsigned c = 0; c < 256; ++c) t[c] = kernels::e8m0_to_float(static_cast<uint8_t>(c));
                return t;
            }();
            const auto& table = info.dtype == SafetensorsDtype::F8_E4M3 ? e4m3 : info.dtype == SafetensorsDtype::F8_E5M2 ? e5m2 : e8m0;
            out = at::empty(info.shape, at::TensorOptions().dtype(at::kFloat));
            float* dst = out.data_ptr<float>();
            for (uint64_t i = 0; i < b.size; ++i) dst[i] = table[b.data[i]];
            break;
        }
        default:
            fail(file, name, std::string("dtype ") + safetensors_dtype_name(info.dtype) + " cannot be loaded as float32");
    }
    if (require_finite && out.numel() > 0) {
        const at::Tensor bad = at::isfinite(out).logical_not_().flatten();
        if (bad.any().item<bool>()) {
            const int64_t i = bad.to(at::kByte).argmax().item<int64_t>();
            fail(file, name, "element " + std::to_string(i) + " is " + std::to_string(out.flatten()[i].item<float>()));
        }
    }
    return out;
}

at::Tensor load_float32(const SafetensorsCheckpoint& checkpoint, const std::string& name, bool require_finite) {
    return load_float32(checkpoint.file_of(name), name, require_finite);
}

SafetensorsWriteEntry safetensors_entry(const std::string& name, const at::Tensor& t, std::optional<SafetensorsDtype> as) {
    if (!t.device().is_cpu() || !t.is_contiguous())
        throw UserError("tensor " + quoted_name(name) + ": safetensors_entry needs a contiguous CPU tensor");
    const auto own = safetensors_dtype_of(t.scalar_type());
    SafetensorsWriteEntry e;
    e.name = name;
    if (as) {
        if (safetensors_dtype_bits(*as) != static_cast<int>(t.element_size()) * 8)
            throw UserError("tensor " + quoted_name(name) + ": cannot write " + std::string(t.dtype().name()) + " elements as " +
                            safetensors_dtype_name(*as));
        e.dtype = *as;
    } else {
        if (!own) throw UserError("tensor " + quoted_name(name) + ": " + std::string(t.dtype().name()) + " has no safetensors dtype");
        e.dtype = *own;
    }
    e.shape = t.sizes().vec();
    e.data = t.data_ptr();
    e.size = static_cast<uint64_t>(t.numel()) * t.element_size();
    return e;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    std::vector<at::Tensor> keep;
    std::vector<SafetensorsWriteEntry> entries;
    keep.reserve(tensors.size());
    try {
        for (const auto& [name, t] : tensors) {
            keep.push_back(t.to(at::kCPU).contiguous());
            entries.push_back(safetensors_entry(name, keep.back()));
        }
    } catch (const UserError& e) {
        throw UserError(path + ": " + e.what());
    }
    write_safetensors(path, std::move(entries), metadata);
}

}  // namespace ql
