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

// Whether a "ptq" phase's done / total count thousandths of parts (a layer-by-layer run).
inline constexpr bool ptq_progress_counts_parts(int64_t total) { return total > 0 && total % kPtqProgressPerPart == 0; }
// How many parts there are, and the part in progress: 1-based, the last one once all are done.
inline constexpr int64_t ptq_progress_parts(int64_t total) { return total / kPtqProgressPerPart; }
inline constexpr int64_t ptq_progress_part(int64_t done, int64_t total) {
    return (done < total ? done : total) / kPtqProgressPerPart + (done < total ? 1 : 0);
}

}  // namespace ql
