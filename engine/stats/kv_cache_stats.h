// SPDX-License-Identifier: GPL-3.0-or-later
// Statistics of the cached keys and values of every quantized KV cache, as layer-statistics
// records (engine/core/layer_stats_types.h) so that the stats JSON, the project file and the
// Layer Inspector show them like any layer: kind "kv_cache", layer "<attention>.k_cache" /
// "<attention>.v_cache" (all KV heads) and, per head, "<attention>.k_cache.head<h>". The cached
// tensor's statistics are in `weight` (rows = sampled tokens (x heads), columns = head_dim, so
// channel_absmax is per head_dim channel: RoPE's outlier dimensions show there); weight_shape is
// [rows, head_dim]. Fits: the recipe's KV format first (its calibrated amax, the head's own for
// per-head scales: the grid and clipping the cache really has), then fp8_e4m3 and nvfp4 with
// their own amax for comparison; weight_sqnr_db is the cache's SQNR.
#pragma once

#include <string>
#include <vector>

#include "engine/calib/kv_cache_statistics.h"
#include "engine/core/layer_stats_types.h"
#include "engine/quant/quantized_model.h"

namespace ql {

// `observed` holds the calibration pass's samples of q's KV caches. per_head adds the per-head
// records. `wanted` filters by record name (empty = all).
std::vector<LayerStatistics> kv_cache_statistics(const QuantizedModel& q, KvCacheObservers& observed, bool per_head,
                                                 const std::vector<std::string>& wanted, int top_k, int bins);

}  // namespace ql
