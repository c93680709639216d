// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's answer to a tensor whose rows do not fit its type's block (src/llama-quant.cpp,
// tensor_type_fallback): llama-quantize writes another type for it. Shared by the GGUF type mixes,
// the GGUF export and the recipes' GGUF weight formats, so that a Q4_K preset fake-quantizes
// exactly what a Q4_K file would hold. Plain C++.
#pragma once

#include <cstdint>
#include <string>

#include "engine/io/gguf_file.h"

namespace ql {

// tensor_type_fallback: the type a tensor with rows of `ncols` gets instead of `target` when
// ncols is not a multiple of target's block (IQ1_S .. IQ4_XS -> IQ4_NL, Q2_K / Q3_K / TQ1_0 / TQ2_0
// -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; F16 when that does not fit either); `target`
// itself when it fits.
// Sets `why` when it changes the type.
GgmlType gguf_shape_fallback(int64_t ncols, GgmlType target, std::string& why);

}  // namespace ql
