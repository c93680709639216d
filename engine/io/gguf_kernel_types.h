// SPDX-License-Identifier: GPL-3.0-or-later
// The one mapping between GGUF tensor types (gguf_file.h, ggml's numbering) and QuantLab's block
// kernels (kernels/gguf_blocks.h), used by the GGUF reader, the tensor encoder and the format
// codec's callers. Plain C++.
#pragma once

#include <optional>
#include <string>

#include "engine/io/gguf_file.h"
#include "kernels/gguf_blocks.h"

namespace ql {

// The kernel type of a block type; nullopt for F32 and F16 (no blocks).
std::optional<kernels::GgufType> gguf_kernel_type(GgmlType t);
// The GGUF type a kernel type writes.
GgmlType ggml_type_of(kernels::GgufType t);
// The QuantLab format name of a block type ("gguf_q4_k"); empty for F32 / F16.
std::string gguf_format_name(GgmlType t);

}  // namespace ql
