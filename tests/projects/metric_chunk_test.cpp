// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_chunk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "projects/metric_series.h"

namespace ql::projects {
namespace {

ChunkPoints make(std::initializer_list<std::int64_t> steps) {
    ChunkPoints p;
    for (std::int64_t s : steps) {
        const auto index = static_cast<double>(p.size());
        p.steps.push_back(s);
        p.values.push_back(static_cast<double>(s) * 10.0 + index);
        p.wall_times.push_back(1.7e9 + index);
    }
    return p;
}

TEST(MetricChunk, RoundTripsBitForBitIncludingNaNAndInfinity) {
    ChunkPoints in = make({1, 2, 3, 4});
    in.values[1] = std::numeric_limits<double>::quiet_NaN();
    in.values[2] = std::numeric_limits<double>::infinity();
    in.values[3] = -std::numeric_limits<double>::infinity();
    const std::vector<unsigned char> blob = encode_metric_chunk(in, 1, 3);
    ASSERT_EQ(blob.size(), 3 * kMetricPointBytes);
    ChunkPoints out;
    decode_metric_chunk(blob.data(), blob.size(), 3, out, "p.qlab");
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out.steps, (std::vector<std::int64_t>{2, 3, 4}));
    EXPECT_TRUE(std::isnan(out.values[0]));
    EXPECT_EQ(out.values[1], std::numeric_limits<double>::infinity());
    EXPECT_EQ(out.values[2], -std::numeric_limits<double>::infinity());
    EXPECT_EQ(out.wall_times[2], in.wall_times[3]);
}

TEST(MetricChunk, LayoutIsLittleEndianStructOfArrays) {
    ChunkPoints in = make({0x0102030405060708});
    in.values[0] = 1.0;  // 0x3FF0000000000000
    const auto blob = encode_metric_chunk(in, 0, 1);
    EXPECT_EQ(blob[0], 0x08);
    EXPECT_EQ(blob[7], 0x01);
    EXPECT_EQ(blob[8 + 7], 0x3F);
    EXPECT_EQ(blob[8 + 6], 0xF0);
}

TEST(MetricChunk, SizeMismatchIsADamagedFile) {
    const auto blob = encode_metric_chunk(make({1, 2}), 0, 2);
    ChunkPoints out;
    EXPECT_THROW(decode_metric_chunk(blob.data(), blob.size() - 1, 2, out, "p.qlab"), UserError);
    EXPECT_THROW(decode_metric_chunk(blob.data(), blob.size(), 3, out, "p.qlab"), UserError);
    EXPECT_THROW(decode_metric_chunk(blob.data(), blob.size(), 0, out, "p.qlab"), UserError);
    EXPECT_THROW(decode_metric_chunk(blob.data(), blob.size(), -1, out, "p.qlab"), UserError);
    EXPECT_EQ(out.size(), 0u);
}

TEST(MetricChunk, FinishSeriesKeepsTheLastValueOfARepeatedStep) {
    ChunkPoints p = make({1, 2, 3, 2, 3, 4});  // a resume re-logged steps 2 and 3
    MetricSeries s;
    finish_series(std::move(p), std::nullopt, s);
    EXPECT_EQ(s.steps, (std::vector<std::int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(s.values, (std::vector<double>{10 + 0, 20 + 3, 30 + 4, 40 + 5}));
}

TEST(MetricChunk, FinishSeriesDropsStepsUpToAfterStep) {
    MetricSeries sorted, unsorted;
    finish_series(make({1, 2, 3, 4}), 2, sorted);
    EXPECT_EQ(sorted.steps, (std::vector<std::int64_t>{3, 4}));
    finish_series(make({4, 1, 3, 2}), 2, unsorted);
    EXPECT_EQ(unsorted.steps, (std::vector<std::int64_t>{3, 4}));
}

}  // namespace
}  // namespace ql::projects
