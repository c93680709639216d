// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_chunk.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "engine/core/errors.h"
#include "projects/metric_series.h"

namespace ql::projects {
namespace {

// 64-bit little-endian copies; a plain memcpy on little-endian hosts.
void store_le64(unsigned char* out, const void* in, std::size_t count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(out, in, count * 8);
#else
    const auto* src = static_cast<const unsigned char*>(in);
    for (std::size_t i = 0; i < count; ++i)
        for (int b = 0; b < 8; ++b) out[i * 8 + b] = src[i * 8 + 7 - b];
#endif
}

void load_le64(void* out, const unsigned char* in, std::size_t count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(out, in, count * 8);
#else
    auto* dst = static_cast<unsigned char*>(out);
    for (std::size_t i = 0; i < count; ++i)
        for (int b = 0; b < 8; ++b) dst[i * 8 + b] = in[i * 8 + 7 - b];
#endif
}

}  // namespace

void ChunkPoints::clear() {
    steps.clear();
    values.clear();
    wall_times.clear();
}

std::vector<unsigned char> encode_metric_chunk(const ChunkPoints& points, std::size_t begin, std::size_t count) {
    std::vector<unsigned char> blob(count * kMetricPointBytes);
    store_le64(blob.data(), points.steps.data() + begin, count);
    store_le64(blob.data() + count * 8, points.values.data() + begin, count);
    store_le64(blob.data() + count * 16, points.wall_times.data() + begin, count);
    return blob;
}

void decode_metric_chunk(const void* blob, std::size_t bytes, std::int64_t point_count, ChunkPoints& out,
                         const std::filesystem::path& file) {
    // The count comes from the file, so it is checked before it sizes anything.
    if (point_count <= 0 || static_cast<std::uint64_t>(point_count) > (1u << 24) ||
        bytes != static_cast<std::size_t>(point_count) * kMetricPointBytes || (bytes && !blob))
        throw UserError("project file '" + file.string() + "' is damaged: a metric chunk holds " +
                        std::to_string(bytes) + " bytes for " + std::to_string(point_count) + " points");
    const auto n = static_cast<std::size_t>(point_count);
    const auto* in = static_cast<const unsigned char*>(blob);
    const std::size_t at = out.size();
    out.steps.resize(at + n);
    out.values.resize(at + n);
    out.wall_times.resize(at + n);
    load_le64(out.steps.data() + at, in, n);
    load_le64(out.values.data() + at, in + n * 8, n);
    load_le64(out.wall_times.data() + at, in + n * 16, n);
}

void finish_series(ChunkPoints&& points, std::optional<std::int64_t> after_step, MetricSeries& out) {
    const std::size_t n = points.size();
    bool strictly_increasing = true;
    for (std::size_t i = 1; i < n && strictly_increasing; ++i)
        strictly_increasing = points.steps[i - 1] < points.steps[i];
    if (strictly_increasing) {
        // Fast path: skip to the first step after `after_step` and move the rest.
        const auto first = after_step ? std::upper_bound(points.steps.begin(), points.steps.end(), *after_step) -
                                            points.steps.begin()
                                      : 0;
        if (first == 0) {
            out.steps = std::move(points.steps);
            out.values = std::move(points.values);
            out.wall_times = std::move(points.wall_times);
        } else {
            out.steps.assign(points.steps.begin() + first, points.steps.end());
            out.values.assign(points.values.begin() + first, points.values.end());
            out.wall_times.assign(points.wall_times.begin() + first, points.wall_times.end());
        }
        return;
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return points.steps[a] < points.steps[b]; });
    out.steps.clear();
    out.values.clear();
    out.wall_times.clear();
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = order[k];
        // Of equal steps the stable sort keeps append order; the last one wins.
        if (k + 1 < n && points.steps[order[k + 1]] == points.steps[i]) continue;
        if (after_step && points.steps[i] <= *after_step) continue;
        out.steps.push_back(points.steps[i]);
        out.values.push_back(points.values[i]);
        out.wall_times.push_back(points.wall_times[i]);
    }
}

}  // namespace ql::projects
