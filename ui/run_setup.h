// SPDX-License-Identifier: GPL-3.0-or-later
// What the recipe editor hands to the run launcher: everything one PTQ, QAT or QAD run needs,
// as plain values (the recipe already composed as JSON text).
#pragma once

#include <QMap>
#include <QString>

namespace ql {

struct RunSetup {
    // Lora: adapters trained on the frozen base the recipe quantizes (QLoRA with an NF4 recipe).
    enum class Method { Ptq, Qat, Qad, Lora };
    Method method = Method::Ptq;
    QString presetName;          // the preset the recipe started from
    QString recipeName;          // shown in the project ("NVFP4_DEFAULT", "NVFP4_DEFAULT+overrides")
    QString recipeJson;          // the composed recipe (docs/RECIPES.md)
    QString calibration;         // calibration data spec (docs/DATA.md)
    qint64 calibrationSamples = 0;  // 0 = the recipe's
    // Training (QAT/QAD)
    QString trainData, evalData; // evalData "" = the training data's validation split
    QString evalPairs;           // sentence encoders: a pairs file for the Spearman metrics ("" = none)
    qint64 steps = 300, batchSize = 64, evalEvery = 50, evalSamples = 0;
    double lr = 1e-4, temperature = 1.0, ceWeight = 0.0, finalLrFraction = 0.1;
    QString schedule = QStringLiteral("cosine");
    qint64 warmupSteps = 0, fpSteps = 0;
    bool learnedScales = false;
    quint64 seed = 0;
    QString device = QStringLiteral("cpu");  // "cpu" or "cuda:N" (engine/api/model_api.h available_compute_devices)
    // QAT/QAD on a GPU: "bf16" autocasts the matmuls with float32 master weights (train --precision);
    // the CPU trains in "fp32" only.
    QString precision = QStringLiteral("fp32");
    // LoRA (docs/TRAINING.md "LoRA and QLoRA"): the adapter on the recipe's frozen base.
    qint64 loraRank = 8;
    double loraAlpha = 16, loraDropout = 0;
    QString loraTargets = QStringLiteral("all-linear");
    QString loraInit = QStringLiteral("default");  // default | loftq
    QString loraLoss = QStringLiteral("sft");      // sft | kl (LoRA-QAD)
};

// Where a run computes, for the status bar: "cpu", "cuda:0", "cuda:0 · BF16".
QString computeDeviceText(const RunSetup& s);

QString methodName(RunSetup::Method m);  // "ptq", "qat", "qad", "lora"

}  // namespace ql

#include <QJsonObject>

namespace ql {
// The run's settings as stored in the project (runs.config_json), so a paused run can be resumed
// and a finished one re-run. fromJson fills what it finds and leaves the rest at defaults.
QJsonObject toJson(const RunSetup& s);
RunSetup runSetupFromJson(const QJsonObject& o);
}  // namespace ql
