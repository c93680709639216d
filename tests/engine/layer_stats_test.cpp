// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/formats/format_codec.h"
#include "engine/api/layer_stats_api.h"
#include "engine/api/ptq_api.h"
#include "engine/models/builtin_models.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"
#include "engine/stats/format_fit.h"
#include "engine/stats/layer_statistics.h"
#include "tests/engine/export_test_support.h"

namespace ql {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
}

// numpy.percentile(|x|, p) (linear interpolation) by a full sort: the reference.
double sorted_percentile(std::vector<float> v, double p) {
    for (float& x : v) x = std::fabs(x);
    std::sort(v.begin(), v.end());
    const double r = p / 100.0 * (static_cast<double>(v.size()) - 1);
    const size_t lo = static_cast<size_t>(std::floor(r)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (r - std::floor(r)) * (static_cast<double>(v[hi]) - v[lo]);
}

TEST(TensorStatistics, ConstantTensorHasZeroSpreadAndEveryPercentileAtTheValue) {
    const std::vector<float> v(15, 2.5f);
    const TensorStatistics s = tensor_statistics(v.data(), 3, 5, 4, 10);
    EXPECT_EQ(s.numel, 15);
    EXPECT_EQ(s.amax, 2.5);
    EXPECT_DOUBLE_EQ(s.mean, 2.5);
    EXPECT_EQ(s.std, 0.0);
    EXPECT_EQ(s.kurtosis, 0.0);
    EXPECT_DOUBLE_EQ(s.max_over_mean_abs, 1.0);
    ASSERT_EQ(s.percentiles.size(), 5u);
    const double expected_p[] = {50, 90, 99, 99.9, 99.99};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(s.percentiles[i].first, expected_p[i]);
        EXPECT_EQ(s.percentiles[i].second, 2.5);
    }
    EXPECT_EQ(s.histogram.lo, -2.5);
    EXPECT_EQ(s.histogram.hi, 2.5);
    ASSERT_EQ(s.histogram.counts.size(), 10u);
    EXPECT_EQ(s.histogram.counts.back(), 15.0);  // the last bin includes hi
    EXPECT_EQ(s.channel_absmax, std::vector<double>(3, 2.5));
    // Ties: the lowest flat indices first.
    ASSERT_EQ(s.top_outliers.size(), 4u);
    EXPECT_EQ(s.top_outliers[0].index, (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(s.top_outliers[3].index, (std::vector<int64_t>{0, 3}));
}

TEST(TensorStatistics, RampMatchesClosedFormMomentsAndExactPercentiles) {
    // 0, 1, ..., 999 as [10, 100]: a discrete uniform distribution.
    std::vector<float> v(1000);
    for (int i = 0; i < 1000; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
    const TensorStatistics s = tensor_statistics(v.data(), 10, 100, 16, 128);
    const double n = 1000;
    EXPECT_DOUBLE_EQ(s.amax, 999);
    EXPECT_NEAR(s.mean, 499.5, 1e-9);
    EXPECT_NEAR(s.std, std::sqrt((n * n - 1) / 12), 1e-9);
    EXPECT_NEAR(s.kurtosis, 3 - 6 * (n * n + 1) / (5 * (n * n - 1)), 1e-9);  // Pearson kurtosis of a discrete uniform
    EXPECT_NEAR(s.max_over_mean_abs, 999 / 499.5, 1e-12);
    // numpy: np.percentile(np.arange(1000), [50, 90, 99, 99.9, 99.99])
    const double expected[] = {499.5, 899.1, 989.01, 998.001, 998.9001};
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(s.percentiles[i].second, expected[i], 1e-9) << s.percentiles[i].first;
    EXPECT_EQ(s.zero_count, 1);
    EXPECT_EQ(s.channel_absmax.front(), 99);
    EXPECT_EQ(s.channel_absmax.back(), 999);
    EXPECT_EQ(s.top_outliers.front().index, (std::vector<int64_t>{9, 99}));
    EXPECT_EQ(s.top_outliers.front().value, 999);
    // Histogram: every value is binned; no zeros in the log histogram.
    double binned = 0;
    for (double c : s.histogram.counts) binned += c;
    EXPECT_EQ(binned + s.histogram.underflow + s.histogram.overflow, 1000);
    double logged = s.abs_log_histogram.underflow;
    for (double c : s.abs_log_histogram.counts) logged += c;
    EXPECT_EQ(logged, 999);
    EXPECT_EQ(s.abs_log_histogram.hi, 10.0);  // 999 is in [2^9.75, 2^10)
    // Per column (activation features).
    const TensorStatistics c = tensor_statistics(v.data(), 10, 100, 0, 8, true);
    ASSERT_EQ(c.channel_absmax.size(), 100u);
    EXPECT_EQ(c.channel_absmax[0], 900);
    EXPECT_EQ(c.channel_absmax[99], 999);
    EXPECT_TRUE(c.top_outliers.empty());
}

TEST(TensorStatistics, GaussianWithPlantedOutlierIsFoundAtItsPosition) {
    const int64_t rows = 512, cols = 512;  // > 65536 elements: split over the threads
    std::vector<float> v = gaussian(rows * cols, 7);
    for (float& x : v) x = std::max(-4.0f, std::min(4.0f, x));
    const TensorStatistics plain = tensor_statistics(v.data(), rows, cols, 16, 128);
    EXPECT_NEAR(plain.kurtosis, 3.0, 0.1);
    EXPECT_NEAR(plain.std, 1.0, 0.01);
    v[static_cast<size_t>(300 * cols + 17)] = -50.0f;
    const TensorStatistics s = tensor_statistics(v.data(), rows, cols, 16, 128);
    EXPECT_EQ(s.amax, 50.0);
    ASSERT_EQ(s.top_outliers.size(), 16u);
    EXPECT_EQ(s.top_outliers[0].index, (std::vector<int64_t>{300, 17}));
    EXPECT_EQ(s.top_outliers[0].value, -50.0);
    EXPECT_LE(std::fabs(s.top_outliers[1].value), 4.0);
    EXPECT_GT(s.kurtosis, plain.kurtosis + 1.0);
    EXPECT_EQ(s.channel_absmax[300], 50.0);
    // The robust range ignores the outlier: it is counted as underflow, not binned.
    EXPECT_LT(s.histogram.hi, 10.0);
    EXPECT_EQ(s.histogram.underflow, 1.0);
    EXPECT_EQ(s.histogram.overflow, 0.0);
    // Percentiles exactly as a full sort gives them.
    for (const auto& [p, value] : s.percentiles) EXPECT_DOUBLE_EQ(value, sorted_percentile(v, p)) << p;
}

TEST(TensorStatistics, PercentilesOfACrowdedCellAreWithinItsWidth) {
    // 2^21 + 1000 values in one cell [1.5, 1.5 + 2^-8 * 1) beyond the exact-candidate cap: they
    // are assumed evenly spread over the cell (capped at amax).
    const int64_t n = (int64_t{1} << 21) + 1000;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 1.5f + static_cast<float>(i % 7) * 0x1p-11f;
    const TensorStatistics s = tensor_statistics(v.data(), 1, n, 1, 16);
    for (const auto& [p, value] : s.percentiles) {
        EXPECT_NEAR(value, 1.5 + 3 * 0x1p-11, 1.5 * 0x1p-8) << p;  // the exact ones are 1.5 + (2..6) 2^-11
        EXPECT_LE(value, s.amax) << p;
    }
}

TEST(TensorStatistics, NanAndInfAreCountedAndExcluded) {
    std::vector<float> v = {1, -2, std::nanf(""), 3, std::numeric_limits<float>::infinity(), 0, -std::numeric_limits<float>::infinity(), 0.5f};
    const TensorStatistics s = tensor_statistics(v.data(), 2, 4, 3, 8);
    EXPECT_EQ(s.nan_count, 1);
    EXPECT_EQ(s.inf_count, 2);
    EXPECT_EQ(s.zero_count, 1);
    EXPECT_EQ(s.amax, 3.0);
    EXPECT_NEAR(s.mean, 2.5 / 5, 1e-12);
    for (const auto& [p, value] : s.percentiles) EXPECT_TRUE(std::isfinite(value)) << p;
    ASSERT_EQ(s.top_outliers.size(), 3u);
    EXPECT_EQ(s.top_outliers[0].value, 3.0);
    EXPECT_EQ(s.top_outliers[1].value, -2.0);
    EXPECT_EQ(s.channel_absmax, (std::vector<double>{3, 0.5}));
    // All non-finite: nothing to measure, nothing crashes.
    const std::vector<float> bad = {std::nanf(""), std::nanf("")};
    const TensorStatistics b = tensor_statistics(bad.data(), 1, 2, 4, 8);
    EXPECT_EQ(b.nan_count, 2);
    EXPECT_EQ(b.amax, 0.0);
    EXPECT_TRUE(b.top_outliers.empty());
}

TEST(TensorStatistics, RejectsBadArguments) {
    const float x = 1;
    EXPECT_THROW(tensor_statistics(&x, -1, 1), UserError);
    EXPECT_THROW(tensor_statistics(&x, 1, 1, -1), UserError);
    EXPECT_THROW(tensor_statistics(&x, 1, 1, 4, 0), UserError);
    EXPECT_THROW(tensor_statistics(nullptr, 1, 1), UserError);
    EXPECT_EQ(tensor_statistics(nullptr, 0, 5).numel, 0);
}

TEST(FormatFit, ClippedFractionCountsValuesBeyondTheirBlocksRange) {
    // Row 0, block 0 (elements 0..15): amax 2688 gives NVFP4 g = 1 and block scale 448.
    // Block 1 (16..31): amax 55.5 asks for block scale 9.25, E4M3 rounds it to 9: max 54 < 55.5.
    // MXFP4 sees one block of 32: floor(log2 2688) = 11, X = 2^9, max 6 * 512 = 3072: nothing clips;
    // row 1 (amax 7.5): X = 2^(2-2) = 1, max 6: 7.5 and 6.5 clip.
    std::vector<float> w(64, 1.0f);
    w[0] = 2688;
    w[16] = 55.5f;
    w[32] = 7.5f;
    w[33] = -6.5f;
    const FormatFit nv = format_fit(w.data(), 2, 32, "nvfp4", nullptr, 0);
    EXPECT_EQ(nv.error, "");
    EXPECT_DOUBLE_EQ(nv.clipped_fraction, 1.0 / 64);
    EXPECT_EQ(nv.scale_kind, "e4m3");
    EXPECT_FLOAT_EQ(static_cast<float>(nv.global_scale), 1.0f);
    ASSERT_EQ(nv.block_scales.size(), 4u);
    EXPECT_EQ(nv.block_scales[0], 448);
    EXPECT_EQ(nv.block_scales[1], 9);
    EXPECT_DOUBLE_EQ(nv.clip_threshold, 2688);
    const FormatFit mx = format_fit(w.data(), 2, 32, "mxfp4", nullptr, 0);
    EXPECT_DOUBLE_EQ(mx.clipped_fraction, 2.0 / 64);
    EXPECT_EQ(mx.scale_kind, "e8m0");
    EXPECT_EQ(mx.block_scales, (std::vector<double>{512, 1}));
    EXPECT_DOUBLE_EQ(mx.clip_threshold, 3072);
    // MX grid overlay: E2M1 values times the largest block scale.
    ASSERT_EQ(mx.grid.size(), 15u);
    EXPECT_EQ(mx.grid.front(), -3072);
    EXPECT_EQ(mx.grid.back(), 3072);
    // Formats whose scale comes from the amax itself never clip.
    for (const char* f : {"int8", "int4", "fp8_e4m3", "nf4"}) {
        const FormatFit fit = format_fit(w.data(), 2, 32, f, nullptr, 0);
        EXPECT_EQ(fit.clipped_fraction, 0.0) << f;
    }
    EXPECT_EQ(format_fit(w.data(), 2, 32, "int8", nullptr, 0).settings, "int8 channel");
    EXPECT_EQ(format_fit(w.data(), 2, 32, "int4", nullptr, 0).settings, "int4 channel");  // 128 does not divide 32
}

TEST(FormatFit, Nvfp4BlockScalesAreE4m3ValuesAndMxfp4ScalesPowersOfTwo) {
    const std::vector<float> w = gaussian(64 * 256, 3, 0.02f);
    const FormatFit nv = format_fit(w.data(), 64, 256, "nvfp4", nullptr, 0);
    const std::vector<float>& e4m3 = format_info("fp8_e4m3").element_values;
    ASSERT_EQ(nv.block_scales.size(), 64u * 16);
    EXPECT_EQ(nv.block_count, 64 * 16);
    for (double s : nv.block_scales) {
        ASSERT_GT(s, 0);
        EXPECT_TRUE(std::binary_search(e4m3.begin(), e4m3.end(), static_cast<float>(s))) << s;
    }
    const FormatFit mx = format_fit(w.data(), 64, 256, "mxfp4", nullptr, 0);
    ASSERT_EQ(mx.block_scales.size(), 64u * 8);
    for (double s : mx.block_scales) {
        int e;
        EXPECT_EQ(std::frexp(s, &e), 0.5) << s;
    }
    // The scale histogram of log2 scales: MX exponents are integers, so each lands on a bin start.
    double total = 0;
    for (double c : mx.scale_histogram.counts) total += c;
    EXPECT_EQ(total, 64.0 * 8);
    EXPECT_EQ(mx.scale_histogram.lo, std::floor(mx.scale_histogram.lo));
}

TEST(FormatFit, SqnrOrdersFormatsByPrecisionOnGaussianWeights) {
    const int64_t out = 64, in = 256, rows = 128;
    const std::vector<float> w = gaussian(out * in, 11, 0.05f), x = gaussian(rows * in, 12);
    const FormatFit i8 = format_fit(w.data(), out, in, "int8", x.data(), rows);
    const FormatFit i4 = format_fit(w.data(), out, in, "int4", x.data(), rows);
    const FormatFit nv = format_fit(w.data(), out, in, "nvfp4", x.data(), rows);
    const FormatFit mx = format_fit(w.data(), out, in, "mxfp4", x.data(), rows);
    EXPECT_GT(i8.output_sqnr_db, i4.output_sqnr_db + 15);
    EXPECT_GT(i8.weight_sqnr_db, i4.weight_sqnr_db + 15);
    EXPECT_GT(nv.weight_sqnr_db, mx.weight_sqnr_db);
    EXPECT_LT(i8.weight_mse, i4.weight_mse);
    // Weight-only quantization of a Gaussian layer: output SQNR close to the weight SQNR.
    EXPECT_NEAR(i4.output_sqnr_db, i4.weight_sqnr_db, 1.5);
    // Quantizing the inputs as well costs SQNR.
    EXPECT_LT(nv.wa_output_sqnr_db, nv.output_sqnr_db);
    EXPECT_GE(nv.input_clipped_fraction, 0.0);
    // Without activations the output SQNR is NaN.
    EXPECT_TRUE(std::isnan(format_fit(w.data(), out, in, "int8", nullptr, 0).output_sqnr_db));
}

TEST(FormatFit, TheWeightItMeasuresEqualsTheFakeQuantizedWeight) {
    // fit_weight decodes its encoding instead of fake-quantizing a second time (finite tensors).
    // Equal values: integer codes decode a rounded -0 as +0, the only bit difference.
    std::vector<float> w = gaussian(8 * 256, 5, 0.1f);
    w[77] = 0.0f;
    for (const FormatInfo& f : all_formats()) {
        QuantOptions o = default_weight_options(f.name, 256);
        QuantSpec spec = resolve_spec(o, {8, 256});
        if (f.requires_importance) set_importance(spec, std::vector<float>(256, 1.0f), {8, 256}, "uniform");
        std::vector<float> q, expected(w.size());
        fit_weight(w.data(), 8, 256, spec, 16, q);
        fake_quantize_buffer(w.data(), expected.data(), {8, 256}, spec);
        EXPECT_EQ(q, expected) << f.name;
        if (f.supports_asymmetric) {
            o.asymmetric = true;
            const QuantSpec asym = resolve_spec(o, {8, 256});
            fit_weight(w.data(), 8, 256, asym, 16, q);
            fake_quantize_buffer(w.data(), expected.data(), {8, 256}, asym);
            EXPECT_EQ(q, expected) << f.name << " asym";
        }
    }
    // With a NaN, fake quantization itself (decoding would give the NaN code's value).
    w[5] = std::nanf("");
    const QuantSpec mx = resolve_spec(default_weight_options("mxfp4", 256), {8, 256});
    std::vector<float> q, expected(w.size());
    fit_weight(w.data(), 8, 256, mx, 16, q);
    fake_quantize_buffer(w.data(), expected.data(), {8, 256}, mx);
    EXPECT_EQ(std::memcmp(q.data(), expected.data(), q.size() * 4), 0);
}

TEST(FormatFit, AFormatThatDoesNotFitReportsWhyAndAnUnknownOneThrows) {
    const std::vector<float> w(3 * 20, 1.0f);
    const FormatFit g = format_fit(w.data(), 3, 20, "gguf_q4_0", nullptr, 0);
    EXPECT_NE(g.error.find("32"), std::string::npos) << g.error;
    EXPECT_TRUE(std::isnan(g.weight_sqnr_db));
    EXPECT_THROW(format_fit(w.data(), 3, 20, "int5", nullptr, 0), UserError);
}

// Remembers what a job reports.
class StatsRecordingSink : public JobSink {
public:
    void progress(int64_t, int64_t, const std::string& phase) override { phases.insert(phase); }
    void layer_metric(const std::string& layer, const std::string& name, double value) override {
        metrics[layer + " " + name] = value;
    }
    std::set<std::string> phases;
    std::map<std::string, double> metrics;
};

LayerStatsRequest tiny_request() {
    LayerStatsRequest r;
    r.model = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";
    r.calibration = "synthetic:random-tokens";
    r.samples = 4;
    r.sequence_length = 16;
    r.formats = {"int8", "nvfp4", "mxfp4"};
    return r;
}

TEST(RunLayerStats, MeasuresEveryLinearLayerOfATinyModelWithTheRecipesFormatFirst) {
    LayerStatsRequest req = tiny_request();
    req.recipe = "NVFP4_DEFAULT";
    StatsRecordingSink sink;
    CancellationToken cancel;
    const LayerStatsReport r = run_layer_stats(req, sink, cancel);
    ASSERT_EQ(r.layers.size(), 15u);  // 2 blocks x 7 Linear + lm_head
    EXPECT_EQ(r.formats, req.formats);
    for (const char* phase : {"load", "calibrate", "weights", "activations", "formats"}) EXPECT_TRUE(sink.phases.count(phase)) << phase;
    const LayerStatistics* up = nullptr;
    for (const LayerStatistics& l : r.layers) {
        if (l.layer == "model.layers.0.mlp.up_proj") up = &l;
        EXPECT_TRUE(l.has_activation) << l.layer;
        EXPECT_GT(l.activation_rows, 0) << l.layer;
        EXPECT_GT(l.weight.amax, 0) << l.layer;
    }
    ASSERT_NE(up, nullptr);
    EXPECT_EQ(up->kind, "linear");
    EXPECT_EQ(up->weight_shape, (std::vector<int64_t>{96, 64}));
    EXPECT_EQ(up->chosen_format, "nvfp4");
    // nvfp4 (the recipe's) first, then int8 and mxfp4: no duplicate.
    ASSERT_EQ(up->fits.size(), 3u);
    EXPECT_EQ(up->fits[0].format, "nvfp4");
    EXPECT_EQ(up->fits[1].format, "int8");
    EXPECT_EQ(up->fits[2].format, "mxfp4");
    EXPECT_EQ(up->first_block.size(), 16u);
    EXPECT_EQ(up->weight.channel_absmax.size(), 96u);
    EXPECT_EQ(up->activation.channel_absmax.size(), 64u);
    for (const FormatFit& f : up->fits) {
        EXPECT_EQ(f.error, "") << f.format;
        EXPECT_TRUE(std::isfinite(f.output_sqnr_db) && f.output_sqnr_db > 0) << f.format;
        EXPECT_LE(f.wa_output_sqnr_db, f.output_sqnr_db + 0.5) << f.format;
    }
    EXPECT_GT(up->fits[1].output_sqnr_db, up->fits[0].output_sqnr_db);  // int8 beats nvfp4
    EXPECT_EQ(sink.metrics.at("model.layers.0.mlp.up_proj sqnr_db/int8"), up->fits[1].output_sqnr_db);
    EXPECT_EQ(sink.metrics.at("model.layers.0.mlp.up_proj clipped_fraction"), up->fits[0].clipped_fraction);
    // lm_head is not quantized by the preset: no chosen format, the requested formats only.
    EXPECT_EQ(r.layers.back().layer, "lm_head");
    EXPECT_EQ(r.layers.back().chosen_format, "");
    EXPECT_EQ(r.layers.back().fits.size(), 3u);
}

TEST(RunLayerStats, WeightsOnlyWithoutCalibrationAndChosenLayers) {
    LayerStatsRequest req = tiny_request();
    req.calibration.clear();
    req.layers = {"model.layers.1.self_attn.o_proj"};
    NullJobSink sink;
    CancellationToken cancel;
    const LayerStatsReport r = run_layer_stats(req, sink, cancel);
    ASSERT_EQ(r.layers.size(), 1u);
    EXPECT_FALSE(r.layers[0].has_activation);
    EXPECT_EQ(r.layers[0].chosen_format, "");
    EXPECT_TRUE(std::isnan(r.layers[0].fits[0].output_sqnr_db));
    EXPECT_GT(r.layers[0].fits[0].weight_sqnr_db, 30);  // int8 per channel
}

TEST(RunLayerStats, AnUnknownLayerIsAUserErrorNamingIt) {
    LayerStatsRequest req = tiny_request();
    req.layers = {"model.layers.0.mlp.up_proj", "model.layers.7.mlp.nope"};
    NullJobSink sink;
    CancellationToken cancel;
    try {
        run_layer_stats(req, sink, cancel);
        FAIL() << "expected a UserError";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("model.layers.7.mlp.nope"), std::string::npos) << e.what();
    }
    req.layers.clear();
    req.formats = {"int8", "fp5"};
    EXPECT_THROW(run_layer_stats(req, sink, cancel), UserError);
}

TEST(RunLayerStats, AQuantizedCheckpointReportsItsFormatAndPtqsOwnErrors) {
    const std::string dir = (std::filesystem::temp_directory_path() /
                             ("quantlab-layer-stats-" + std::to_string(::getpid()))).string();
    PtqRequest p;
    p.model = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";
    p.recipe = "NVFP4_DEFAULT";
    p.calibration = "synthetic:random-tokens";
    p.samples = 4;
    p.sequence_length = 16;
    p.out_dir = dir + "/q";
    NullJobSink sink;
    CancellationToken cancel;
    const PtqSummary ptq = run_ptq(p, sink, cancel);
    LayerStatsRequest req = tiny_request();
    req.model = p.out_dir;
    req.layers = {"model.layers.0.self_attn.q_proj"};
    const LayerStatsReport r = run_layer_stats(req, sink, cancel);
    LayerStatsRequest with_recipe = req;  // a checkpoint brings its own recipe
    with_recipe.recipe = "FP8_DEFAULT";
    EXPECT_THROW(run_layer_stats(with_recipe, sink, cancel), UserError);
    std::filesystem::remove_all(dir);
    ASSERT_EQ(r.layers.size(), 1u);
    const LayerStatistics& l = r.layers[0];
    EXPECT_EQ(l.chosen_format, "nvfp4");
    const PtqLayerSummary& s = ptq.layers[0];
    ASSERT_EQ(s.layer, l.layer);
    // The calibrated input amax of the checkpoint, and PTQ's output SQNR (weights and inputs
    // quantized, same FP input samples) reproduced by the chosen fit.
    EXPECT_FLOAT_EQ(static_cast<float>(l.input_amax), static_cast<float>(s.input_amax));
    EXPECT_EQ(l.input_clipped_fraction, 0.0);  // max calibration on these very inputs
    EXPECT_NEAR(l.fits[0].wa_output_sqnr_db, s.output_sqnr_db, 1e-6);
    EXPECT_NEAR(l.fits[0].weight_mse, s.weight_mse, 1e-12);
}

TEST(MeasureLayerStatistics, Conv2dLayersMatchPtqsOutputSqnrOnTheSameImages) {
    auto model = create_model(cnn_config(), 3);
    const Dataset images = test::random_images(24);
    NullJobSink sink;
    CancellationToken cancel;
    LayerStatsOptions o;
    o.formats = {"int8", "mxfp8_e4m3"};
    std::vector<LayerStatistics> stats;
    {
        QuantizedModel q(*model, load_recipe("NVFP4_DEFAULT"));
        stats = measure_layer_statistics(q, &images, o, sink, cancel);
    }
    QuantizedModel q(*model, load_recipe("NVFP4_DEFAULT"));
    const PtqResult ptq = run_ptq_pipeline(q, images, PtqOptions{}, sink, cancel);
    ASSERT_EQ(stats.size(), 3u);  // conv1, conv2, fc
    ASSERT_EQ(ptq.layers.size(), 3u);
    EXPECT_EQ(stats[0].kind, "conv2d");
    EXPECT_EQ(stats[0].weight_shape.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
        const LayerStatistics& l = stats[i];
        EXPECT_EQ(l.layer, ptq.layers[i].layer);
        EXPECT_TRUE(l.has_activation) << l.layer;
        EXPECT_EQ(l.chosen_format, "nvfp4");
        ASSERT_EQ(l.fits.size(), 3u);
        // Every image is sampled, so the samples' own amax is the calibrated one: the chosen fit
        // with inputs quantized is PTQ's output SQNR.
        EXPECT_NEAR(l.fits[0].wa_output_sqnr_db, ptq.layers[i].output_sqnr_db, 1e-9) << l.layer;
        EXPECT_GT(l.fits[1].output_sqnr_db, l.fits[0].output_sqnr_db) << l.layer;  // int8 weights beat nvfp4
        // Activation channels: the conv's input channels, the fc's input features.
        EXPECT_EQ(static_cast<int64_t>(l.activation.channel_absmax.size()), l.weight_shape[1]) << l.layer;
    }
}

TEST(RunLayerStats, ACancelledJobStops) {
    NullJobSink sink;
    CancellationToken cancel;
    cancel.cancel();
    EXPECT_THROW(run_layer_stats(tiny_request(), sink, cancel), JobCancelled);
}

}  // namespace
}  // namespace ql
