// SPDX-License-Identifier: GPL-3.0-or-later
// What LLM.int8()'s mixed-precision decomposition does to one layer's inputs: which feature
// columns bitsandbytes would compute in FP16 and how often (engine/core/layer_stats_types.h).
#pragma once

#include <cstdint>

#include "engine/core/layer_stats_types.h"

namespace ql {

// x: [rows, cols] row-major float32 (sampled input tokens x features, not owned). threshold:
// bitsandbytes' llm_int8_threshold (6 by default).
LlmInt8Decomposition llm_int8_decomposition(const float* x, int64_t rows, int64_t cols, double threshold = 6.0);

}  // namespace ql
