// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/kv_cache_scales.h"

namespace ql {

float kv_scale_of(float amax) { return amax / 448.0f; }

}  // namespace ql
