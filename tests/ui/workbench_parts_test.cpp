// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench's plain parts: recipe composition from a preset and the editor's choices, the
// progress estimate (rate, ETA), and the run settings stored with a project run.
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProgressBar>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "engine/api/model_api.h"
#include "engine/api/ptq_api.h"
#include "engine/jobs/ptq_progress.h"
#include "ui/job_runner.h"
#include "ui/progress_estimate.h"
#include "ui/recipe_composer.h"
#include "ui/recipe_editor.h"
#include "ui/run_controls.h"
#include "ui/run_setup.h"
#include "wait_for.h"

namespace ql {
namespace {

QJsonObject compose(const QString& preset, const RecipeChoices& c) {
    const QString json = QString::fromStdString(recipe_name_and_json(preset.toStdString()).second);
    return QJsonDocument::fromJson(composeRecipe(json, QStringLiteral("custom"), c).toUtf8()).object();
}

QJsonObject entry(const QJsonObject& recipe, const QString& pattern) {
    QJsonObject found;
    for (const auto& v : recipe.value(QStringLiteral("quant_cfg")).toArray())
        if (v.toObject().value(QStringLiteral("quantizer_name")).toString() == pattern) found = v.toObject();
    return found;
}

TEST(RecipeComposer, NewWeightFormatReplacesTheCfgAndKeepsTheDisableList) {
    RecipeChoices c;
    c.weightFormat = QStringLiteral("mxfp4");
    const QJsonObject r = compose(QStringLiteral("INT4_AWQ"), c);
    const QJsonObject w = entry(r, QStringLiteral("*weight_quantizer"));
    // int4's group_size must not survive into an mxfp4 cfg (the engine rejects it).
    EXPECT_EQ(w.value(QStringLiteral("cfg")).toObject(), QJsonObject({{QStringLiteral("format"), QStringLiteral("mxfp4")}}));
    EXPECT_EQ(entry(r, QStringLiteral("*lm_head*")).value(QStringLiteral("enable")).toBool(true), false);
    EXPECT_EQ(r.value(QStringLiteral("name")).toString(), QStringLiteral("custom"));
    // The AWQ algorithm of the preset is kept when the editor leaves it alone.
    EXPECT_EQ(r.value(QStringLiteral("algorithm")).toObject().value(QStringLiteral("method")).toString(), QStringLiteral("awq"));
}

TEST(RecipeComposer, GranularityAndGroupSizeGoIntoTheWeightCfg) {
    RecipeChoices c;
    c.weightFormat = QStringLiteral("int8");
    c.weightGranularity = QStringLiteral("group");
    c.groupSize = 64;
    const QJsonObject cfg = entry(compose(QStringLiteral("FP8_DEFAULT"), c), QStringLiteral("*weight_quantizer"))
                                .value(QStringLiteral("cfg"))
                                .toObject();
    EXPECT_EQ(cfg.value(QStringLiteral("granularity")).toString(), QStringLiteral("group"));
    EXPECT_EQ(cfg.value(QStringLiteral("group_size")).toInt(), 64);
}

TEST(RecipeComposer, ActivationsOffTurnsTheInputEntryIntoADisable) {
    RecipeChoices c;
    c.inputFormat = QStringLiteral("off");
    const QJsonObject in = entry(compose(QStringLiteral("NVFP4_DEFAULT"), c), QStringLiteral("*input_quantizer"));
    EXPECT_FALSE(in.contains(QStringLiteral("cfg")));
    EXPECT_EQ(in.value(QStringLiteral("enable")).toBool(true), false);
}

TEST(RecipeComposer, ActivationFormatForAWeightOnlyPresetIsInsertedBeforeTheDisables) {
    RecipeChoices c;
    c.inputFormat = QStringLiteral("fp8_e4m3");
    const QJsonArray entries = compose(QStringLiteral("INT4_AWQ"), c).value(QStringLiteral("quant_cfg")).toArray();
    int input = -1, lmHead = -1;
    for (int i = 0; i < entries.size(); ++i) {
        const QString name = entries[i].toObject().value(QStringLiteral("quantizer_name")).toString();
        if (name == QLatin1String("*input_quantizer")) input = i;
        if (name == QLatin1String("*lm_head*")) lmHead = i;
    }
    ASSERT_GE(input, 0);
    EXPECT_LT(input, lmHead);
}

TEST(RecipeComposer, LayerOverridesComeLastAsUsersWriteThem) {
    RecipeChoices c;
    c.layerFormats.insert(QStringLiteral("model.layers.0.mlp.down_proj"), QStringLiteral("fp8_e4m3"));
    c.layerFormats.insert(QStringLiteral("model.layers.1.self_attn.q_proj"), QStringLiteral("off"));
    const QJsonArray entries = compose(QStringLiteral("NVFP4_DEFAULT"), c).value(QStringLiteral("quant_cfg")).toArray();
    ASSERT_GE(entries.size(), 2);
    const QJsonObject a = entries[entries.size() - 2].toObject();
    const QJsonObject b = entries[entries.size() - 1].toObject();
    EXPECT_EQ(a.value(QStringLiteral("quantizer_name")).toString(), QStringLiteral("model.layers.0.mlp.down_proj.weight_quantizer"));
    EXPECT_EQ(a.value(QStringLiteral("cfg")).toObject().value(QStringLiteral("format")).toString(), QStringLiteral("fp8_e4m3"));
    EXPECT_EQ(b.value(QStringLiteral("quantizer_name")).toString(), QStringLiteral("model.layers.1.self_attn.q_proj.*"));
    EXPECT_EQ(b.value(QStringLiteral("enable")).toBool(true), false);
}

TEST(RecipeComposer, AlgorithmAndCalibrationSamples) {
    RecipeChoices c;
    c.algorithm = QStringLiteral("smoothquant");
    c.smoothquantAlpha = 0.8;
    c.calibrationSamples = 32;
    const QJsonObject r = compose(QStringLiteral("INT8_SMOOTHQUANT"), c);
    EXPECT_DOUBLE_EQ(r.value(QStringLiteral("algorithm")).toObject().value(QStringLiteral("alpha")).toDouble(), 0.8);
    EXPECT_EQ(r.value(QStringLiteral("calibration")).toObject().value(QStringLiteral("samples")).toInt(), 32);
}

TEST(RecipeComposer, KvCacheAndRotationBecomeTheRecipesSections) {
    RecipeChoices c;
    c.kvCache = QStringLiteral("nvfp4");
    c.rotation = QStringLiteral("hadamard");
    const QJsonObject r = compose(QStringLiteral("NVFP4_DEFAULT"), c);
    EXPECT_EQ(r.value(QStringLiteral("kv_cache")).toString(), QStringLiteral("nvfp4"));
    EXPECT_EQ(r.value(QStringLiteral("rotation")).toString(), QStringLiteral("hadamard"));
    // The engine reads the composed recipe with both sections.
    const QString json = QString::fromUtf8(QJsonDocument(r).toJson());
    const auto [name, canonical] = recipe_name_and_json([&] {
        const std::string path = "/tmp/quantlab-composer-kv.json";
        QFile f(QString::fromStdString(path));
        EXPECT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(json.toUtf8());
        return path;
    }());
    EXPECT_NE(canonical.find("\"kv_cache\""), std::string::npos);
    EXPECT_NE(canonical.find("\"method\": \"hadamard\""), std::string::npos);
    // "none" drops a section the preset would carry.
    c.kvCache = QStringLiteral("none");
    c.rotation = QStringLiteral("none");
    QJsonObject withSections = r;
    const QJsonObject cleared = QJsonDocument::fromJson(
        composeRecipe(QString::fromUtf8(QJsonDocument(withSections).toJson()), QStringLiteral("custom"), c).toUtf8()).object();
    EXPECT_FALSE(cleared.contains(QStringLiteral("kv_cache")));
    EXPECT_FALSE(cleared.contains(QStringLiteral("rotation")));
}

TEST(RecipeComposer, MalformedPresetIsAnErrorNotACrash) {
    EXPECT_THROW(composeRecipe(QStringLiteral("[1,2"), QStringLiteral("x"), {}), std::runtime_error);
}

TEST(ProgressEstimate, RateAndTimeLeftFromReports) {
    ProgressEstimate p;
    p.update(0, 100, "train", 10.0);
    EXPECT_FALSE(p.rate());
    EXPECT_FALSE(p.eta_s());
    p.update(10, 100, "train", 11.0);  // 10 steps/s
    ASSERT_TRUE(p.rate());
    EXPECT_DOUBLE_EQ(*p.rate(), 10.0);
    EXPECT_DOUBLE_EQ(*p.eta_s(), 9.0);
    EXPECT_DOUBLE_EQ(*p.fraction(), 0.1);
    p.update(30, 100, "train", 12.0);  // 20 steps/s now: averaged 0.7·10 + 0.3·20 = 13
    EXPECT_DOUBLE_EQ(*p.rate(), 13.0);
    EXPECT_NEAR(*p.eta_s(), 70.0 / 13.0, 1e-12);
    p.update(30, 100, "train", 12.1);  // under a quarter second: no new measurement
    EXPECT_DOUBLE_EQ(*p.rate(), 13.0);
}

TEST(ProgressEstimate, NewPhaseOrUnknownTotalResets) {
    ProgressEstimate p;
    p.update(0, 10, "calibrate", 0.0);
    p.update(5, 10, "calibrate", 1.0);
    ASSERT_TRUE(p.rate());
    p.update(0, 0, "eval", 1.5);
    EXPECT_EQ(p.phase(), "eval");
    EXPECT_FALSE(p.rate());
    EXPECT_FALSE(p.fraction());
    EXPECT_FALSE(p.eta_s());
}

TEST(RunControls, ALayerByLayerPtqShowsItsBlockThePercentageAndTheMemoryLane) {
    JobRunner runner;
    RunControls controls(&runner);
    std::atomic<int64_t> done{1500};
    ASSERT_TRUE(runner.start(QStringLiteral("PTQ"), [&done](JobSink& sink, const CancellationToken& cancel) {
        while (!cancel.cancelled()) {
            sink.progress(done.load(), 17 * kPtqProgressPerPart, "ptq");  // 1.5 of 17 blocks
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        cancel.throw_if_cancelled();
    }));
    const auto shows = [&](const QString& text) {
        return test::waitFor([&] { return controls.progressBar()->format() == text; }, 20000);
    };
    EXPECT_TRUE(shows(QStringLiteral("block 2 of 17 · 8.8 %"))) << controls.progressBar()->format().toStdString();
    EXPECT_TRUE(controls.progressText().contains(QStringLiteral("RSS"))) << controls.progressText().toStdString();
    EXPECT_FALSE(controls.progressText().contains(QStringLiteral("items/s"))) << "thousandths of a block are no unit to show";
    done = 17 * kPtqProgressPerPart;  // all done: the last block, not an 18th
    EXPECT_TRUE(shows(QStringLiteral("block 17 of 17 · 100.0 %"))) << controls.progressBar()->format().toStdString();
    runner.cancel();
    EXPECT_TRUE(runner.waitForFinished(20000));
}

TEST(ProgressEstimate, DurationsReadAsPeopleSayThem) {
    EXPECT_EQ(format_duration(42.4), "42 s");
    EXPECT_EQ(format_duration(192), "3 min 12 s");
    EXPECT_EQ(format_duration(7500), "2 h 05 min");
    EXPECT_EQ(format_duration(-1), "—");
}

TEST(RunSetup, StoredSettingsRoundTrip) {
    RunSetup s;
    s.method = RunSetup::Method::Qad;
    s.recipeName = QStringLiteral("NVFP4_DEFAULT+custom");
    s.trainData = QStringLiteral("synthetic:arith:+");
    s.steps = 123;
    s.lr = 3e-5;
    s.temperature = 2.0;
    s.schedule = QStringLiteral("wsd");
    s.seed = 7;
    s.device = QStringLiteral("cuda:1");
    const RunSetup t = runSetupFromJson(toJson(s));
    EXPECT_EQ(t.method, RunSetup::Method::Qad);
    EXPECT_EQ(t.recipeName, s.recipeName);
    EXPECT_EQ(t.trainData, s.trainData);
    EXPECT_EQ(t.steps, 123);
    EXPECT_DOUBLE_EQ(t.lr, 3e-5);
    EXPECT_DOUBLE_EQ(t.temperature, 2.0);
    EXPECT_EQ(t.schedule, QStringLiteral("wsd"));
    EXPECT_EQ(t.seed, 7u);
    EXPECT_EQ(t.device, QStringLiteral("cuda:1"));
    // A run stored before the device choice ran on the CPU.
    QJsonObject old = toJson(s);
    old.remove(QStringLiteral("device"));
    EXPECT_EQ(runSetupFromJson(old).device, QStringLiteral("cpu"));
}

// The recipe editor offers the devices this build and machine can use, the CPU first and chosen;
// its run setup (what the launcher hands the engine and records in the project) carries it.
TEST(RecipeEditor, TheDeviceChoiceListsWhatThisBuildCanUse) {
    RecipeEditor editor;
    auto* device = editor.findChild<QComboBox*>(QStringLiteral("device"));
    ASSERT_NE(device, nullptr);
    const std::vector<std::string> devices = available_compute_devices();
    ASSERT_FALSE(devices.empty());
    EXPECT_EQ(devices.front(), "cpu");
    ASSERT_EQ(device->count(), static_cast<int>(devices.size()));
    for (int i = 0; i < device->count(); ++i) EXPECT_EQ(device->itemText(i).toStdString(), devices[i]);
    EXPECT_EQ(editor.setup().device, QStringLiteral("cpu"));
    EXPECT_EQ(toJson(editor.setup()).value(QStringLiteral("device")).toString(), QStringLiteral("cpu"));
    if (device->count() > 1) {  // a CUDA build on a GPU machine
        device->setCurrentIndex(1);
        EXPECT_EQ(editor.setup().device, QString::fromStdString(devices[1]));
    }
}

TEST(RecipeEditor, Bf16PrecisionIsOfferedForTrainingOnAGpuOnly) {
    RecipeEditor editor;
    auto* device = editor.findChild<QComboBox*>(QStringLiteral("device"));
    auto* precision = editor.findChild<QComboBox*>(QStringLiteral("precision"));
    ASSERT_NE(device, nullptr);
    ASSERT_NE(precision, nullptr);
    ASSERT_EQ(precision->count(), 2);
    EXPECT_EQ(precision->itemData(1).toString(), QStringLiteral("bf16"));
    device->setCurrentIndex(0);  // cpu
    editor.setMethod(RunSetup::Method::Qad);
    EXPECT_FALSE(precision->isEnabled());  // train --precision bf16 is refused on the CPU
    EXPECT_EQ(editor.setup().precision, QStringLiteral("fp32"));
    EXPECT_EQ(toJson(editor.setup()).value(QStringLiteral("precision")).toString(), QStringLiteral("fp32"));
    if (device->count() > 1) {  // a CUDA build on a GPU machine
        device->setCurrentIndex(1);
        ASSERT_TRUE(precision->isEnabled());
        precision->setCurrentIndex(1);
        EXPECT_EQ(editor.setup().precision, QStringLiteral("bf16"));
        editor.setMethod(RunSetup::Method::Ptq);  // PTQ does not train: back to fp32
        EXPECT_FALSE(precision->isEnabled());
        EXPECT_EQ(editor.setup().precision, QStringLiteral("fp32"));
    }
}

TEST(RunSetup, PrecisionRoundTripsAndNamesTheDevice) {
    RunSetup s;
    s.method = RunSetup::Method::Qad;
    s.device = QStringLiteral("cuda:1");
    s.precision = QStringLiteral("bf16");
    const RunSetup back = runSetupFromJson(toJson(s));
    EXPECT_EQ(back.device, QStringLiteral("cuda:1"));
    EXPECT_EQ(back.precision, QStringLiteral("bf16"));
    EXPECT_EQ(computeDeviceText(back), QStringLiteral("cuda:1 · BF16"));
    s.method = RunSetup::Method::Ptq;  // PTQ has no training precision
    EXPECT_EQ(computeDeviceText(s), QStringLiteral("cuda:1"));
    // quantlab-cli train's record and runs stored before the choice.
    EXPECT_EQ(runSetupFromJson(QJsonObject{{QStringLiteral("mode"), QStringLiteral("qat")}}).precision, QStringLiteral("fp32"));
    EXPECT_EQ(computeDeviceText(runSetupFromJson(QJsonObject{})), QStringLiteral("cpu"));
}

}  // namespace
}  // namespace ql
