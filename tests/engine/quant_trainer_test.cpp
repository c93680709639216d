// SPDX-License-Identifier: GPL-3.0-or-later
// QAT / QAD mechanics on the golden tiny Llama with random-token data: exact where they can be.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/eval/evaluator.h"
#include "engine/io/npy_file.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/train/distillation_loss.h"
#include "engine/train/qat_lr_schedule.h"
#include "engine/train/quant_trainer.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/quant/quantized_checkpoint.h"
#include <c10/core/InferenceMode.h>
#include "tests/engine/user_error_text.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
const std::string kTrainerLlama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

// Records every metric; optionally cancels the run after a given step's loss.
struct RecordingSink : JobSink {
    std::map<std::string, std::map<int64_t, double>> series;
    CancellationToken* cancel = nullptr;
    int64_t cancel_after = -1;
    void metric(int64_t step, const std::string& name, double value) override {
        series[name][step] = value;
        if (cancel && name == "train/loss" && step == cancel_after) cancel->cancel();
    }
};

struct Student {
    OpenedModel opened;
    std::unique_ptr<QuantizedModel> q;
};

Student calibrated_student(const std::string& recipe) {
    Student s;
    s.opened = open_model(kTrainerLlama, WeightStorage::Float32Copy);  // trained: owned float32 weights
    s.q = std::make_unique<QuantizedModel>(*s.opened.model, load_recipe(recipe));
    DataOptions o;
    o.split = DataSplit::Train;
    o.samples = 16;
    NullJobSink sink;
    CancellationToken cancel;
    run_ptq_pipeline(*s.q, load_dataset("synthetic:random-tokens", o, s.opened.data), PtqOptions{}, sink, cancel);
    return s;
}

QuantTrainingConfig config(const std::string& mode, int64_t steps, double lr = 3e-3) {
    QuantTrainingConfig c;
    c.mode = mode;
    c.steps = steps;
    c.schedule.peak = lr;
    c.schedule.decay = LrSchedule::Decay::Constant;
    c.config_json = "{\"test\": 1}";
    return c;
}

TEST(DistillationLoss, IsZeroForIdenticalLogitsAndMatchesTheDefinition) {
    const at::Tensor t = at::randn({2, 5, 11}), s = at::randn({2, 5, 11});
    const at::Tensor mask = at::ones({2, 5}, at::kBool);
    EXPECT_EQ(distillation_kl(t, t, mask, 1.0).item<float>(), 0.0f);
    EXPECT_EQ(distillation_kl(t, t, mask, 2.0).item<float>(), 0.0f);
    // sum_v p_t (log p_t - log p_s), averaged over positions, times T^2.
    const at::Tensor lt = at::log_softmax(t / 2.0, -1), ls = at::log_softmax(s / 2.0, -1);
    const double want = (lt.exp() * (lt - ls)).sum(-1).mean().item<double>() * 4.0;
    EXPECT_NEAR(distillation_kl(t, s, mask, 2.0).item<double>(), want, 1e-6);
    // Unscored positions do not count.
    at::Tensor half = mask.clone();
    half.narrow(1, 0, 2).fill_(false);
    const double want_half = (lt.exp() * (lt - ls)).sum(-1).narrow(1, 2, 3).mean().item<double>() * 4.0;
    EXPECT_NEAR(distillation_kl(t, s, half, 2.0).item<double>(), want_half, 1e-6);
    EXPECT_THROW(distillation_kl(t, s, mask, 0.0), UserError);
}

TEST(QuantTrainer, QadLowersTheKlToTheTeacherAndNeverTouchesTheTeacher) {
    Student s = calibrated_student("NVFP4_DEFAULT");
    OpenedModel teacher = open_model(kTrainerLlama);
    std::map<std::string, at::Tensor> before;
    for (const auto& [name, p] : teacher.model->named_parameters()) before[name] = p.clone();
    const TrainingBatches data("synthetic:random-tokens", s.opened.data, 16, 0);
    RecordingSink sink;
    CancellationToken cancel;
    const QuantTrainingResult r = train_quantized(*s.q, teacher.model.get(), data, config("qad", 20), nullptr, sink, cancel);
    EXPECT_EQ(r.steps, 20);
    const auto& kl = sink.series["train/kl"];
    ASSERT_EQ(kl.size(), 20u);
    double first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += kl.at(i), last += kl.at(15 + i);
    EXPECT_LT(last, 0.7 * first);
    for (const auto& [name, p] : teacher.model->named_parameters()) EXPECT_TRUE(at::equal(p, before[name])) << name;
    EXPECT_FALSE(teacher.model->named_parameters().front().second.requires_grad());
    EXPECT_GT(r.codes_changed, 0.0);
    EXPECT_LT(r.codes_changed, 1.0);
    EXPECT_EQ(sink.series["train/codes_changed"].size(), 1u);
    EXPECT_GT(sink.series["train/tokens_per_s"].at(0), 0.0);
    // The student's parameters are left without requires_grad.
    EXPECT_FALSE(s.opened.model->named_parameters().front().second.requires_grad());
}

TEST(QuantTrainer, QatLearnsATaskWithFakeQuantizedWeightsAndInputs) {
    Student s = calibrated_student("FP8_DEFAULT");
    // A learnable stream: token t is followed by (t * 5 + 3) mod 128, saved as a token file.
    const std::string dir = test::temp_dir("train");
    NdArray tokens = NdArray::zeros(DType::Int64, {4096});
    int64_t t = 1;
    for (int64_t i = 0; i < 4096; ++i, t = (t * 5 + 3) % 128) tokens.as<int64_t>()[i] = t;
    write_npy(dir + "/stream.npy", tokens);
    const TrainingBatches data(dir + "/stream.npy", s.opened.data, 16, 0, 32);
    RecordingSink sink;
    CancellationToken cancel;
    train_quantized(*s.q, nullptr, data, config("qat", 30, 1e-2), nullptr, sink, cancel);
    const auto& loss = sink.series["train/loss"];
    EXPECT_EQ(sink.series.count("train/kl"), 0u);
    EXPECT_NEAR(loss.at(0), std::log(128.0), 0.3);  // a random model starts near uniform
    EXPECT_LT(loss.at(29), 0.5 * loss.at(0));
    fs::remove_all(dir);
}

TEST(QuantTrainer, AStoppedRunResumesBitExactly) {
    const std::string dir = test::temp_dir("train");
    const TrainingBatches data_a("synthetic:random-tokens", calibrated_student("NVFP4_DEFAULT").opened.data, 8, 5);
    // Uninterrupted.
    Student a = calibrated_student("NVFP4_DEFAULT");
    OpenedModel teacher = open_model(kTrainerLlama);
    RecordingSink full;
    CancellationToken never;
    train_quantized(*a.q, teacher.model.get(), data_a, config("qad", 8), nullptr, full, never);
    // Stopped after step 3 (the checkpoint holds 4 steps), then resumed.
    QuantTrainingConfig c = config("qad", 8);
    c.checkpoint_dir = dir;
    Student b = calibrated_student("NVFP4_DEFAULT");
    RecordingSink first;
    CancellationToken cancel;
    first.cancel = &cancel;
    first.cancel_after = 3;
    EXPECT_THROW(train_quantized(*b.q, teacher.model.get(), data_a, c, nullptr, first, cancel), JobCancelled);
    EXPECT_EQ(first.series["train/loss"].size(), 4u);
    EXPECT_TRUE(fs::exists(dir + "/checkpoint/trainer_state.json"));
    Student b2 = calibrated_student("NVFP4_DEFAULT");
    RecordingSink second;
    const QuantTrainingResult r = train_quantized(*b2.q, teacher.model.get(), data_a, c, nullptr, second, never);
    EXPECT_EQ(r.resumed_from, 4);
    ASSERT_EQ(second.series["train/loss"].size(), 4u);
    for (int64_t step = 4; step < 8; ++step)
        EXPECT_EQ(second.series["train/loss"].at(step), full.series["train/loss"].at(step)) << step;
    const auto pa = a.opened.model->named_parameters(), pb = b2.opened.model->named_parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
    // Another run's settings do not resume from this checkpoint.
    QuantTrainingConfig other = c;
    other.config_json = "{\"test\": 2}";
    Student b3 = calibrated_student("NVFP4_DEFAULT");
    EXPECT_THROW(train_quantized(*b3.q, teacher.model.get(), data_a, other, nullptr, second, never), UserError);
    fs::remove_all(dir);
}

TEST(QuantTrainer, BadSettingsFailBeforeTraining) {
    Student s = calibrated_student("NVFP4_DEFAULT");
    const TrainingBatches data("synthetic:random-tokens", s.opened.data, 4, 0);
    NullJobSink sink;
    CancellationToken cancel;
    EXPECT_THROW(train_quantized(*s.q, nullptr, data, config("qad", 5), nullptr, sink, cancel), UserError);  // no teacher
    EXPECT_THROW(train_quantized(*s.q, nullptr, data, config("kd", 5), nullptr, sink, cancel), UserError);
    EXPECT_THROW(train_quantized(*s.q, nullptr, data, config("qat", 0), nullptr, sink, cancel), UserError);
    // A diverging run stops with an error naming the step.
    const std::string diverged =
        test::user_error_text([&] { train_quantized(*s.q, nullptr, data, config("qat", 5, 1e30), nullptr, sink, cancel); });
    EXPECT_NE(diverged.find("diverged"), std::string::npos) << diverged;
}

}  // namespace
}  // namespace ql

namespace ql {
namespace {

TEST(QuantTrainer, LearnedStepSizesTrainAndTheCheckpointKeepsTheirResult) {
    OpenedModel m = open_model(kTrainerLlama, WeightStorage::Float32Copy);  // trained: owned float32 weights
    QuantizedModel q(*m.model, parse_recipe(R"({"quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*lm_head*", "enable": false}]})",
                                            "int4"));
    const TrainingBatches data("synthetic:random-tokens", m.data, 8, 0);
    OpenedModel teacher = open_model(kTrainerLlama);
    QuantTrainingConfig c = config("qad", 6);
    c.learned_scales = true;
    // The steps before training, to see that they moved.
    q.find("model.layers.0.mlp.up_proj")->enable_learned_scales();
    const at::Tensor initial = q.find("model.layers.0.mlp.up_proj")->learned_scales()->clone();
    q.find("model.layers.0.mlp.up_proj")->finish_learned_scales();
    RecordingSink sink;
    CancellationToken cancel;
    train_quantized(q, teacher.model.get(), data, c, nullptr, sink, cancel);
    LayerQuantizer& up = *q.find("model.layers.0.mlp.up_proj");
    EXPECT_EQ(up.learned_scales(), nullptr);  // folded into the pinned weight
    EXPECT_TRUE(up.weight_pinned());
    // The pinned weight has the learned steps: it differs from the max rule on the trained weight.
    const at::Tensor rule = fake_quantize(up.layer().weight.detach(), up.weight_spec());
    EXPECT_FALSE(at::equal(up.quantized_weight(), rule));
    (void)initial;
    const std::string dir = test::temp_dir("train");
    save_quantized_checkpoint(q, kTrainerLlama, dir + "/m", false);
    OpenedModel back = open_model(dir + "/m");
    const at::Tensor ids = data.batch(100).inputs;
    {
        c10::InferenceMode inference;
        EXPECT_TRUE(at::equal(m.model->forward(ids), back.model->forward(ids)));
    }
    fs::remove_all(dir);
    // Formats without integer steps are refused.
    Student s = calibrated_student("NVFP4_DEFAULT");
    EXPECT_THROW(train_quantized(*s.q, teacher.model.get(), data, c, nullptr, sink, cancel), UserError);
}

}  // namespace
}  // namespace ql

namespace ql {
namespace {

TEST(QuantTrainer, CooldownFusionTrainsFullPrecisionFirstThenQuantizesWhereTheDecayStarts) {
    Student s = calibrated_student("FP8_DEFAULT");
    const TrainingBatches data("synthetic:random-tokens", s.opened.data, 8, 0);
    QatLrScheduleConfig fused;
    fused.total_steps = 8;
    fused.qat_fraction = 0.5;
    fused.peak = 1e-3;
    const QatLrSchedule schedule(fused);
    ASSERT_EQ(schedule.qat_start_step(), 4);
    QuantTrainingConfig c = config("qat", 8);
    c.fp_steps = 4;
    c.lr_at = [schedule](int64_t step) { return schedule.at(step); };
    int calls = 0;
    bool quantized_during_fp = false;
    c.before_quantized_steps = [&] {
        ++calls;
        for (const auto& l : s.q->layers()) quantized_during_fp = quantized_during_fp || l->weight_enabled();
    };
    RecordingSink sink;
    CancellationToken cancel;
    train_quantized(*s.q, nullptr, data, c, nullptr, sink, cancel);
    EXPECT_EQ(calls, 1);
    EXPECT_FALSE(quantized_during_fp);  // the FP phase ran with the quantizers off
    for (int64_t step = 0; step < 8; ++step) EXPECT_EQ(sink.series["train/lr"].at(step), schedule.at(step)) << step;
    EXPECT_EQ(sink.series["train/lr"].at(3), 1e-3);  // no decay, no new warm-up before the QAT start
    EXPECT_LT(sink.series["train/lr"].at(4), 1e-3);
    EXPECT_TRUE(s.q->find("model.layers.0.mlp.up_proj")->weight_enabled());
    c.mode = "qad";
    EXPECT_THROW(train_quantized(*s.q, s.opened.model.get(), data, c, nullptr, sink, cancel), UserError);
}

}  // namespace
}  // namespace ql
