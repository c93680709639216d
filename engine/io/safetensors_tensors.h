// SPDX-License-Identifier: GPL-3.0-or-later
// LibTorch tensors over safetensors files (engine-internal: includes ATen).
//
// safetensors_tensor() is zero-copy: the tensor's storage is the file's read-only mapping, kept
// alive by the tensor itself (a copy of the file's owner sits in its deleter), so it outlives
// the SafetensorsFile / SafetensorsCheckpoint. WRITING INTO IT CRASHES (SIGSEGV): clone() before
// any in-place use (add_, copy_, out= ...). load_tensor() and load_float32() return ordinary
// owned tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_file.h"

namespace ql {

// The LibTorch dtype that holds a safetensors dtype exactly: BOOL, U8, I8, I16, I32, I64, F16,
// BF16, F32, F64, C64. Others (FP8/FP6/FP4, E8M0, U16/U32/U64) have none in every LibTorch we
// build against; read them with safetensors_raw_tensor() or load_float32().
std::optional<at::ScalarType> torch_dtype_of(SafetensorsDtype d);
std::optional<SafetensorsDtype> safetensors_dtype_of(at::ScalarType t);

// Zero-copy, read-only (see above), dtype from torch_dtype_of, shape as stored. A tensor whose
// bytes are not aligned to its element size (possible in files from other writers) is copied
// instead. BOOL bytes other than 0/1 are rejected. Throws UserError naming the file and tensor.
at::Tensor safetensors_tensor(const SafetensorsFile& file, const std::string& name);
at::Tensor safetensors_tensor(const SafetensorsCheckpoint& checkpoint, const std::string& name);

// An owned, contiguous copy with the same dtype and shape (single-threaded memcpy: faster than
// safetensors_tensor(...).clone(), which pays LibTorch's copy_ dispatch; bench/safetensors_bench).
at::Tensor load_tensor(const SafetensorsFile& file, const std::string& name);
at::Tensor load_tensor(const SafetensorsCheckpoint& checkpoint, const std::string& name);

// Zero-copy, read-only uint8 view of any tensor's bytes: the stored shape for 8-bit dtypes
// (FP8 / E8M0 codes), else 1-D [byte size] (FP4/FP6 packing, wider types).
at::Tensor safetensors_raw_tensor(const SafetensorsFile& file, const std::string& name);

// An owned, contiguous float32 copy of a floating-point tensor: F32, F16, BF16, F64 (rounded),
// F8_E4M3, F8_E5M2 (OCP FP8) and F8_E8M0 (2^(e-127)). With require_finite, NaN or Inf throws
// UserError naming the file, the tensor and the first such element.
at::Tensor load_float32(const SafetensorsFile& file, const std::string& name, bool require_finite = false);
at::Tensor load_float32(const SafetensorsCheckpoint& checkpoint, const std::string& name, bool require_finite = false);

// An entry that points into `t` (contiguous, CPU; keep it alive until written). `as` overrides
// the dtype for tensors that hold codes of another type of the same width (a uint8 tensor of
// FP8 E4M3 codes written as F8_E4M3); throws UserError otherwise.
SafetensorsWriteEntry safetensors_entry(const std::string& name, const at::Tensor& t,
                                        std::optional<SafetensorsDtype> as = std::nullopt);
// Writes tensors (any device or layout: made contiguous on the CPU first) with their own dtypes.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ql
