// SPDX-License-Identifier: GPL-3.0-or-later
// How a layer-by-layer PTQ (engine/ptq/ptq_pipeline.h) counts its progress, for those who show
// it. Plain C++ (facade header): usable from ui/ and app/.
#pragma once

#include <cstdint>

namespace ql {

// Phase "ptq" is reported in thousandths of a part (one decoder block; the layers outside the
// blocks are the last part): done / kPtqProgressPerPart parts are finished, of
// total / kPtqProgressPerPart.
inline constexpr int64_t kPtqProgressPerPart = 1000;

}  // namespace ql
