// SPDX-License-Identifier: GPL-3.0-or-later
// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian; C order), read and written
// with the checks numpy's own reader makes: magic, version, header length within the file,
// a well-formed header dict with exactly descr/fortran_order/shape, a known dtype, and a data
// size that matches the shape exactly. Every error names the file and the field.
// Plain C++ (no LibTorch): usable from app/ as part of the engine facade.
#pragma once

#include <string>

#include "engine/core/nd_array.h"

namespace ql {

NdArray read_npy(const std::string& path);

// Writes atomically: to "<path>.partial", then renamed over `path`. BFloat16 is written as
// uint16 bit patterns (numpy has no bfloat16).
void write_npy(const std::string& path, const NdArray& array);

// Parses an in-memory .npy image; `name` is used in error messages.
NdArray parse_npy(const std::string& bytes, const std::string& name);
std::string serialize_npy(const NdArray& array);

}  // namespace ql
