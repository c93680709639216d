// SPDX-License-Identifier: GPL-3.0-or-later
// Metric points are stored in chunks of up to kMetricChunkPoints points of one series, one
// BLOB each, rather than one row per point: loading a 1 M-point series is then a few hundred
// memcpys instead of a million SQLite row decodes (docs/PROJECT_FILES.md has the numbers), and
// NaN survives (SQLite turns a bound NaN REAL into NULL).
//
// Blob layout, little-endian, struct of arrays: int64 steps[n], float64 values[n],
// float64 wall_times[n]; n is the row's point_count, so the blob is exactly 24·n bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ql::projects {

struct MetricSeries;

inline constexpr std::size_t kMetricChunkPoints = 1024;
inline constexpr std::size_t kMetricPointBytes = 24;

// Points of one series in append order, the form the writer buffers and chunks are made of.
struct ChunkPoints {
    std::vector<std::int64_t> steps;
    std::vector<double> values;
    std::vector<double> wall_times;

    std::size_t size() const { return steps.size(); }
    void clear();
};

std::vector<unsigned char> encode_metric_chunk(const ChunkPoints& points, std::size_t begin, std::size_t count);

// Appends the points of a stored chunk to `out`. A blob whose size does not match
// `point_count` is reported as a damaged project file (UserError naming `file`).
void decode_metric_chunk(const void* blob, std::size_t bytes, std::int64_t point_count, ChunkPoints& out,
                         const std::filesystem::path& file);

// Sorts by step and keeps the last-appended point of each step (a resumed run re-logs the steps
// after its checkpoint), dropping steps <= after_step when given; the common already-sorted case
// is a move.
void finish_series(ChunkPoints&& points, std::optional<std::int64_t> after_step, MetricSeries& out);

}  // namespace ql::projects
