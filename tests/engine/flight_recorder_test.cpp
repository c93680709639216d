// SPDX-License-Identifier: GPL-3.0-or-later
// The QAT/QAD flight recorder (engine/train/flight_recorder.h) on the golden tiny Llama.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <map>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"
#include "engine/train/flight_recorder.h"
#include "engine/train/quant_trainer.h"

namespace ql {
namespace {

const std::string kLlama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

// Every metric and warning a job reports.
struct RecordingSink : JobSink {
    std::map<std::string, std::map<int64_t, double>> series;
    std::vector<std::string> warnings;
    void metric(int64_t step, const std::string& name, double value) override { series[name][step] = value; }
    void log(LogLevel level, const std::string& text) override {
        if (level == LogLevel::Warning) warnings.push_back(text);
    }
};

TEST(FlightRecorder, RecordsCodeFlipsDriftAndClippingPerLayer) {
    OpenedModel m = open_model(kLlama);
    // W4A16 INT4 in groups of 16 (the tiny model's rows hold 64 or 96 weights).
    const Recipe int4 = parse_recipe(R"({"name": "INT4_G16", "algorithm": "max", "quant_cfg": [
        {"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 16}},
        {"quantizer_name": "*lm_head*", "enable": false}]})",
                                     "test recipe");
    QuantizedModel q(*m.model, int4);
    for (const auto& l : q.layers()) l->set_weight_enabled(l->weight_configured());
    RecordingSink sink;
    FlightRecorder recorder(q, nullptr, 5);
    EXPECT_TRUE(recorder.due(0, 12));
    EXPECT_TRUE(recorder.due(10, 12));
    EXPECT_TRUE(recorder.due(12, 12));
    EXPECT_FALSE(recorder.due(7, 12));
    recorder.record(0, sink);
    const std::string up = "model.layers.0.mlp.up_proj", down = "model.layers.1.mlp.down_proj";
    EXPECT_EQ(sink.series["flight/flips_since_last/" + up][0], 0.0);
    EXPECT_EQ(sink.series["flight/amax_drift/" + up][0], 0.0);
    // Shift the first row of one weight by half its amax: its codes and group scales change.
    // (Scaling it would not: a group's scale follows its amax, the codes stay.)
    double amax_before = 0, amax_after = 0;
    {
        c10::NoGradGuard no_grad;
        QuantizableLayer& l = q.find(up)->layer();
        amax_before = l.weight.abs().max().item<double>();
        l.weight[0].add_(l.weight[0].abs().max() * 0.5);
        amax_after = l.weight.abs().max().item<double>();
    }
    recorder.note_step(1.0, 0.0);
    recorder.record(5, sink);
    const double flips = sink.series["flight/flips_since_last/" + up][5];
    const int64_t cols = q.find(up)->layer().weight.size(1), n = q.find(up)->layer().weight.numel();
    EXPECT_GT(flips, 0.0);
    EXPECT_LE(flips, static_cast<double>(cols) / static_cast<double>(n));  // only the first row moved
    EXPECT_EQ(sink.series["flight/flips_since_last/" + down][5], 0.0);
    EXPECT_NEAR(sink.series["flight/amax_drift/" + up][5], amax_after / amax_before - 1, 1e-6);
    EXPECT_GE(amax_after, amax_before);
    EXPECT_GT(sink.series["flight/scale_drift/" + up][5], 0.0);
    EXPECT_EQ(sink.series["flight/scale_drift/" + down][5], 0.0);
    // Nothing changes in the next window: no flips since the last record, the same since the start.
    recorder.note_step(1.0, 0.0);
    recorder.record(10, sink);
    EXPECT_EQ(sink.series["flight/flips_since_last/" + up][10], 0.0);
    EXPECT_EQ(sink.series["flight/flips_since_start/" + up][10], sink.series["flight/flips_since_start/" + up][5]);
    // Per-group INT4 takes its scale from each group's amax: nothing saturates.
    EXPECT_EQ(sink.series["flight/clip_fraction/" + up][10], 0.0);
    EXPECT_EQ(sink.series["flight/loss_ce_part"][10], 1.0);
    EXPECT_TRUE(sink.series.count("flight/flips_since_last"));
    EXPECT_FALSE(sink.series.count("flight/block_distance/model.layers.0"));  // no teacher
    EXPECT_THROW(FlightRecorder(q, nullptr, 0), UserError);
}

TEST(FlightRecorder, WarnsWhenARunStagnatesOrDiverges) {
    OpenedModel m = open_model(kLlama);
    QuantizedModel q(*m.model, load_recipe("NVFP4_DEFAULT"));
    for (const auto& l : q.layers()) l->set_weight_enabled(l->weight_configured());
    RecordingSink sink;
    FlightRecorder recorder(q, nullptr, 2);
    recorder.record(0, sink);
    for (int64_t step = 1; step <= 6; ++step) {
        recorder.note_step(2.0, 0.0);  // a flat loss and weights that never move
        if (step % 2 == 0) recorder.record(step, sink);
    }
    EXPECT_EQ(sink.series["flight/stagnating"][2], 0.0);  // one window is not a trend
    EXPECT_EQ(sink.series["flight/stagnating"][4], 1.0);
    EXPECT_EQ(sink.series["flight/stagnating"][6], 1.0);
    ASSERT_EQ(sink.warnings.size(), 1u);  // warned once while it lasts
    EXPECT_NE(sink.warnings[0].find("stagnates"), std::string::npos) << sink.warnings[0];
    recorder.note_step(3.5, 0.0);
    recorder.record(8, sink);
    EXPECT_EQ(sink.series["flight/diverging"][8], 1.0);
    EXPECT_EQ(sink.series["flight/stagnating"][8], 0.0);
    ASSERT_EQ(sink.warnings.size(), 2u);
    EXPECT_NE(sink.warnings[1].find("diverges"), std::string::npos) << sink.warnings[1];
}

TEST(FlightRecorder, ANearPerfectModelsLossNoiseIsNeitherDivergenceNorMovement) {
    // The shipped demo's QAT loss is ~1e-5 nats and doubles from batch to batch: no divergence
    // (below kLossResolution), and without code changes that noise is a flat loss.
    OpenedModel m = open_model(kLlama);
    QuantizedModel q(*m.model, load_recipe("NVFP4_DEFAULT"));
    for (const auto& l : q.layers()) l->set_weight_enabled(l->weight_configured());
    RecordingSink sink;
    FlightRecorder recorder(q, nullptr, 2);
    recorder.record(0, sink);
    const double losses[] = {4e-5, 8e-5, 2e-5, 9e-5, 3e-5, 1.9e-4};
    for (int64_t step = 1; step <= 6; ++step) {
        recorder.note_step(losses[step - 1], 0.0);
        recorder.note_step(losses[step - 1], 0.0);
        if (step % 2 == 0) recorder.record(step, sink);
    }
    for (int64_t step : {2, 4, 6}) EXPECT_EQ(sink.series["flight/diverging"][step], 0.0) << step;
    EXPECT_EQ(sink.series["flight/stagnating"][4], 1.0);
    ASSERT_EQ(sink.warnings.size(), 1u);
    EXPECT_NE(sink.warnings[0].find("stagnates"), std::string::npos) << sink.warnings[0];
    // A real divergence from there is still one.
    recorder.note_step(0.5, 0.0);
    recorder.record(8, sink);
    EXPECT_EQ(sink.series["flight/diverging"][8], 1.0);
}

TEST(FlightRecorder, QadRecordsEveryLayerAndTheTeacherStudentDistancePerBlock) {
    OpenedModel m = open_model(kLlama, WeightStorage::Float32Copy);  // trained: owned float32 weights
    OpenedModel teacher = open_model(kLlama);
    QuantizedModel q(*m.model, load_recipe("NVFP4_DEFAULT"));
    DataOptions o;
    o.split = DataSplit::Train;
    o.samples = 16;
    o.sequence_length = 16;
    NullJobSink quiet;
    CancellationToken cancel;
    run_ptq_pipeline(q, load_dataset("synthetic:random-tokens", o, m.data), PtqOptions{}, quiet, cancel);
    const TrainingBatches batches("synthetic:random-tokens", m.data, 8, 0, 16);
    QuantTrainingConfig c;
    c.mode = "qad";
    c.steps = 6;
    c.record_every = 3;
    c.schedule.peak = 1e-3;
    RecordingSink sink;
    train_quantized(q, teacher.model.get(), batches, c, {}, sink, cancel);
    for (const auto& l : q.layers()) {
        if (!l->weight_configured()) continue;
        const auto& flips = sink.series["flight/flips_since_start/" + l->name()];
        ASSERT_EQ(flips.size(), 3u) << l->name();  // steps 0, 3, 6
        EXPECT_EQ(flips.at(0), 0.0);
        EXPECT_GE(flips.at(6), flips.at(3) * 0.5) << l->name();
        const double clip = sink.series["flight/clip_fraction/" + l->name()].at(6);
        EXPECT_GE(clip, 0.0);
        EXPECT_LT(clip, 0.2) << l->name();
        EXPECT_TRUE(sink.series["flight/global_scale_drift/" + l->name()].count(6)) << l->name();
    }
    EXPECT_GT(sink.series["flight/flips_since_start"].at(6), 0.0);  // QAD moves codes at lr 1e-3
    for (const char* block : {"model.layers.0", "model.layers.1"}) {
        const auto& d = sink.series[std::string("flight/block_distance/") + block];
        ASSERT_EQ(d.size(), 2u) << block;  // recorded steps with a forward: 3 and 6
        EXPECT_GT(d.at(3), 0.0);
        EXPECT_LT(d.at(3), 1.0);
    }
    // The block distance grows with depth: the error of block 0 is carried into block 1.
    EXPECT_GT(sink.series["flight/block_distance/model.layers.1"].at(3), sink.series["flight/block_distance/model.layers.0"].at(3));
    EXPECT_GT(sink.series["flight/loss_kl_part"].at(6), 0.0);
    EXPECT_EQ(sink.series["flight/loss_ce_part"].at(6), 0.0);  // ce_weight 0
    EXPECT_FALSE(m.model->residual_stream().tapped());
    EXPECT_FALSE(teacher.model->residual_stream().tapped());
}

}  // namespace
}  // namespace ql
