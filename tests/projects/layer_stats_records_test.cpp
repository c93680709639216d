// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/layer_stats_records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace ql::projects {
namespace {

ql::LayerStatsReport report() {
    ql::LayerStatsReport r;
    r.model_path = "/models/tiny";
    r.formats = {"nvfp4", "int8", "gguf_q4_0"};
    ql::LayerStatistics l;
    l.layer = "model.layers.0.mlp.up_proj";
    l.kind = "linear";
    l.weight_shape = {4, 32};
    l.weight.numel = 128;
    l.weight.amax = 0.5;
    l.weight.kurtosis = 3.25;
    l.weight.percentiles = {{50, 0.1}, {99.99, 0.45}};
    l.weight.histogram = {-0.5, 0.5, {1, 2, 3, 4}, 0, 2};
    l.weight.abs_log_histogram = {-10, -1, {5, 6, 7}, 3, 0};
    l.weight.channel_absmax = {0.5, 0.25, 0.125, 0.0625};
    l.weight.top_outliers = {{{0, 3}, -0.5}, {{1, 7}, 0.25}};
    l.weight.nan_count = 1;
    l.has_activation = true;
    l.activation_rows = 8;
    l.activation.amax = 3;
    l.activation.histogram = {-3, 3, {8, 8}, 0, 0};
    l.activation.channel_absmax = std::vector<double>(32, 1.5);
    l.chosen_format = "nvfp4";
    l.first_block = {0.5f, -0.25f};
    ql::FormatFit nv;
    nv.format = "nvfp4";
    nv.settings = "nvfp4";
    nv.clipped_fraction = 0.125;
    nv.weight_sqnr_db = std::numeric_limits<double>::infinity();
    nv.output_sqnr_db = std::numeric_limits<double>::quiet_NaN();
    nv.scale_kind = "e4m3";
    nv.block_scales = {448, 9, 1.25, 0.171875};
    nv.block_count = 4;
    nv.global_scale = 0.001;
    nv.scale_histogram = {-3, 9, {1, 0, 3}, 0, 0};
    nv.grid = {-0.5, 0, 0.5};
    nv.clip_threshold = 0.5;
    ql::FormatFit i8 = nv;
    i8.format = "int8";
    i8.scale_kind = "fp32";
    i8.output_sqnr_db = 40.5;
    ql::FormatFit bad;
    bad.format = "gguf_q4_0";
    bad.error = "needs a multiple of 32";
    l.fits = {nv, i8, bad};
    r.layers.push_back(l);
    ql::LayerStatistics w = l;
    w.layer = "lm_head";
    w.has_activation = false;
    w.activation = {};
    r.layers.push_back(w);
    return r;
}

TEST(LayerStatsRecords, KindsPerLayerAsTheProjectFileStoresThem) {
    const auto records = to_project_records(report(), 7);
    std::vector<std::string> kinds;
    for (const LayerStats& s : records)
        if (s.layer == "model.layers.0.mlp.up_proj") kinds.push_back(s.kind);
    EXPECT_EQ(kinds, (std::vector<std::string>{"weight_histogram", "weight_log_histogram", "channel_absmax",
                                               "activation_histogram", "activation_log_histogram",
                                               "activation_channel_absmax", "block_scales/nvfp4",
                                               "scale_histogram/nvfp4", "block_scales/int8", "scale_histogram/int8"}));
    EXPECT_EQ(records.front().step, 7);
    EXPECT_EQ(records.front().range_min, -0.5);
    EXPECT_EQ(records.front().values, (std::vector<float>{1, 2, 3, 4}));
    const auto j = nlohmann::json::parse(records.front().outliers_json);
    EXPECT_EQ(j.at("chosen_format"), "nvfp4");
    EXPECT_EQ(j.at("fits").size(), 3u);
    EXPECT_EQ(j.at("fits")[0].at("weight_sqnr_db"), "inf");
}

TEST(LayerStatsRecords, RoundTripThroughBlobsGivesTheStatisticsBack) {
    const ql::LayerStatsReport in = report();
    std::vector<LayerStats> stored;
    for (const LayerStats& s : to_project_records(in)) {
        const auto blob = encode_layer_stats_blob(s);
        LayerStats back = s;
        back.values.clear();
        decode_layer_stats_blob(blob.data(), blob.size(), back, "p.qlab");
        stored.push_back(back);
    }
    std::reverse(stored.begin(), stored.end());  // any order: scales before their layer's summary
    std::vector<ql::LayerStatistics> out = from_project_records(stored);
    ASSERT_EQ(out.size(), 2u);
    const ql::LayerStatistics* l = out[0].layer == "lm_head" ? &out[1] : &out[0];
    const ql::LayerStatistics& e = in.layers[0];
    EXPECT_EQ(l->layer, e.layer);
    EXPECT_EQ(l->kind, "linear");
    EXPECT_EQ(l->weight_shape, e.weight_shape);
    EXPECT_EQ(l->chosen_format, "nvfp4");
    EXPECT_EQ(l->first_block, e.first_block);
    EXPECT_EQ(l->weight.amax, 0.5);
    EXPECT_EQ(l->weight.kurtosis, 3.25);
    EXPECT_EQ(l->weight.nan_count, 1);
    EXPECT_EQ(l->weight.percentiles, e.weight.percentiles);
    ASSERT_EQ(l->weight.top_outliers.size(), 2u);
    EXPECT_EQ(l->weight.top_outliers[0].index, (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(l->weight.top_outliers[0].value, -0.5);
    EXPECT_EQ(l->weight.histogram.counts, e.weight.histogram.counts);
    EXPECT_EQ(l->weight.histogram.overflow, 2);
    EXPECT_EQ(l->weight.abs_log_histogram.lo, -10);
    EXPECT_EQ(l->weight.abs_log_histogram.underflow, 3);
    EXPECT_EQ(l->weight.channel_absmax, e.weight.channel_absmax);
    EXPECT_TRUE(l->has_activation);
    EXPECT_EQ(l->activation.amax, 3);
    EXPECT_EQ(l->activation.channel_absmax.size(), 32u);
    ASSERT_EQ(l->fits.size(), 3u);
    EXPECT_EQ(l->fits[0].format, "nvfp4");
    EXPECT_TRUE(std::isinf(l->fits[0].weight_sqnr_db));
    EXPECT_TRUE(std::isnan(l->fits[0].output_sqnr_db));
    EXPECT_EQ(l->fits[0].block_scales, e.fits[0].block_scales);
    EXPECT_EQ(l->fits[0].scale_histogram.counts, e.fits[0].scale_histogram.counts);
    EXPECT_FLOAT_EQ(static_cast<float>(l->fits[0].global_scale), 0.001f);
    EXPECT_EQ(l->fits[0].grid, e.fits[0].grid);
    EXPECT_EQ(l->fits[1].output_sqnr_db, 40.5);
    EXPECT_EQ(l->fits[2].error, "needs a multiple of 32");
    const ql::LayerStatistics* head = l == &out[0] ? &out[1] : &out[0];
    EXPECT_FALSE(head->has_activation);
}

TEST(LayerStatsRecords, MalformedJsonIsAUserErrorNamingTheLayer) {
    LayerStats s;
    s.layer = "model.layers.3.mlp.down_proj";
    s.kind = "weight_histogram";
    s.outliers_json = "{\"weight\": {\"amax\": [1]}}";
    try {
        from_project_records({s});
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("model.layers.3.mlp.down_proj"), std::string::npos) << e.what();
    }
}

TEST(LayerStatsRecords, ReportJsonCarriesEveryLayerAndFit) {
    const auto j = nlohmann::json::parse(layer_stats_report_json(report()));
    EXPECT_EQ(j.at("model"), "/models/tiny");
    ASSERT_EQ(j.at("layers").size(), 2u);
    EXPECT_EQ(j.at("layers")[0].at("fits")[0].at("block_scales").size(), 4u);
    EXPECT_EQ(j.at("layers")[0].at("activation").at("amax"), 3.0);
    EXPECT_FALSE(j.at("layers")[1].contains("activation"));
}

}  // namespace
}  // namespace ql::projects
