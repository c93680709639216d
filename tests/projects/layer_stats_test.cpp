// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/layer_stats.h"

#include <gtest/gtest.h>

#include "engine/core/errors.h"

namespace ql::projects {
namespace {

LayerStats histogram() {
    LayerStats s;
    s.layer = "model.layers.0.mlp.up_proj";
    s.kind = "weight_histogram";
    s.range_min = -0.25;
    s.range_max = 0.25;
    s.values = {1.0f, 5.0f, 20.0f, 5.0f, 1.0f};
    return s;
}

TEST(LayerStatsBlob, RoundTripsHeaderAndValues) {
    const LayerStats in = histogram();
    const auto blob = encode_layer_stats_blob(in);
    ASSERT_EQ(blob.size(), kLayerStatsHeaderBytes + 4 * in.values.size());
    EXPECT_EQ(std::string(blob.begin(), blob.begin() + 4), "QLSB");
    LayerStats out;
    decode_layer_stats_blob(blob.data(), blob.size(), out, "p.qlab");
    EXPECT_EQ(out.range_min, -0.25);
    EXPECT_EQ(out.range_max, 0.25);
    EXPECT_EQ(out.values, in.values);
}

TEST(LayerStatsBlob, Float32ValuesAreLittleEndian) {
    LayerStats s;
    s.values = {1.0f};  // 0x3F800000
    const auto blob = encode_layer_stats_blob(s);
    EXPECT_EQ(blob[kLayerStatsHeaderBytes + 0], 0x00);
    EXPECT_EQ(blob[kLayerStatsHeaderBytes + 2], 0x80);
    EXPECT_EQ(blob[kLayerStatsHeaderBytes + 3], 0x3F);
}

TEST(LayerStatsBlob, MalformedBlobsAreDamagedFileErrors) {
    const auto good = encode_layer_stats_blob(histogram());
    LayerStats out;
    auto bad_copy = good;
    bad_copy[0] = 'X';
    EXPECT_THROW(decode_layer_stats_blob(bad_copy.data(), bad_copy.size(), out, "p.qlab"), UserError);
    EXPECT_THROW(decode_layer_stats_blob(good.data(), 10, out, "p.qlab"), UserError);
    EXPECT_THROW(decode_layer_stats_blob(good.data(), good.size() - 1, out, "p.qlab"), UserError);
    bad_copy = good;
    bad_copy[15] = 0xff;  // a count near 2^64 must not overflow the size check
    EXPECT_THROW(decode_layer_stats_blob(bad_copy.data(), bad_copy.size(), out, "p.qlab"), UserError);
    bad_copy = good;
    bad_copy[6] = 2;  // unknown element type
    EXPECT_THROW(decode_layer_stats_blob(bad_copy.data(), bad_copy.size(), out, "p.qlab"), UserError);
}

}  // namespace
}  // namespace ql::projects
