// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/run_setup.h"

namespace ql {

QString methodName(RunSetup::Method m) {
    switch (m) {
        case RunSetup::Method::Qat: return QStringLiteral("qat");
        case RunSetup::Method::Qad: return QStringLiteral("qad");
        case RunSetup::Method::Lora: return QStringLiteral("lora");
        case RunSetup::Method::Ptq: break;
    }
    return QStringLiteral("ptq");
}

}  // namespace ql

namespace ql {

QJsonObject toJson(const RunSetup& s) {
    return QJsonObject{
        {QStringLiteral("method"), methodName(s.method)},
        {QStringLiteral("preset"), s.presetName},
        {QStringLiteral("recipe_name"), s.recipeName},
        {QStringLiteral("calibration"), s.calibration},
        {QStringLiteral("calibration_samples"), s.calibrationSamples},
        {QStringLiteral("data"), s.trainData},
        {QStringLiteral("eval_data"), s.evalData},
        {QStringLiteral("eval_pairs"), s.evalPairs},
        {QStringLiteral("steps"), s.steps},
        {QStringLiteral("batch_size"), s.batchSize},
        {QStringLiteral("eval_every"), s.evalEvery},
        {QStringLiteral("eval_samples"), s.evalSamples},
        {QStringLiteral("lr"), s.lr},
        {QStringLiteral("temperature"), s.temperature},
        {QStringLiteral("ce_weight"), s.ceWeight},
        {QStringLiteral("final_lr_fraction"), s.finalLrFraction},
        {QStringLiteral("schedule"), s.schedule},
        {QStringLiteral("warmup_steps"), s.warmupSteps},
        {QStringLiteral("fp_steps"), s.fpSteps},
        {QStringLiteral("lsq"), s.learnedScales},
        {QStringLiteral("seed"), static_cast<qint64>(s.seed)},
        {QStringLiteral("device"), s.device},
        {QStringLiteral("precision"), s.precision},
        {QStringLiteral("rank"), s.loraRank},
        {QStringLiteral("alpha"), s.loraAlpha},
        {QStringLiteral("dropout"), s.loraDropout},
        {QStringLiteral("targets"), s.loraTargets},
        {QStringLiteral("init"), s.loraInit},
        {QStringLiteral("loss"), s.loraLoss},
    };
}

RunSetup runSetupFromJson(const QJsonObject& o) {
    RunSetup s;
    // quantlab-cli train records the method as "mode": runs of either can be resumed here.
    const QString m = o.contains(QStringLiteral("method")) ? o.value(QStringLiteral("method")).toString()
                                                           : o.value(QStringLiteral("mode")).toString();
    s.method = m == QLatin1String("qat") ? RunSetup::Method::Qat
               : m == QLatin1String("qad") ? RunSetup::Method::Qad
               : (m == QLatin1String("lora") || m == QLatin1String("qlora")) ? RunSetup::Method::Lora
                                           : RunSetup::Method::Ptq;
    s.presetName = o.value(QStringLiteral("preset")).toString();
    s.recipeName = o.value(QStringLiteral("recipe_name")).toString();
    s.calibration = o.value(QStringLiteral("calibration")).toString();
    s.calibrationSamples = o.value(QStringLiteral("calibration_samples")).toInteger();
    s.trainData = o.value(QStringLiteral("data")).toString();
    s.evalData = o.value(QStringLiteral("eval_data")).toString();
    s.evalPairs = o.value(QStringLiteral("eval_pairs")).toString();
    s.steps = o.value(QStringLiteral("steps")).toInteger(s.steps);
    s.batchSize = o.value(QStringLiteral("batch_size")).toInteger(s.batchSize);
    s.evalEvery = o.value(QStringLiteral("eval_every")).toInteger(s.evalEvery);
    s.evalSamples = o.value(QStringLiteral("eval_samples")).toInteger(s.evalSamples);
    s.lr = o.value(QStringLiteral("lr")).toDouble(s.lr);
    s.temperature = o.value(QStringLiteral("temperature")).toDouble(s.temperature);
    s.ceWeight = o.value(QStringLiteral("ce_weight")).toDouble(s.ceWeight);
    s.finalLrFraction = o.value(QStringLiteral("final_lr_fraction")).toDouble(s.finalLrFraction);
    s.schedule = o.value(QStringLiteral("schedule")).toString(s.schedule);
    s.warmupSteps = o.value(QStringLiteral("warmup_steps")).toInteger(s.warmupSteps);
    s.fpSteps = o.value(QStringLiteral("fp_steps")).toInteger(s.fpSteps);
    s.learnedScales = o.value(QStringLiteral("lsq")).toBool();
    s.seed = static_cast<quint64>(o.value(QStringLiteral("seed")).toInteger());
    // Runs recorded before the device choice ran on the CPU.
    s.device = o.value(QStringLiteral("device")).toString(QStringLiteral("cpu"));
    // quantlab-cli train records "precision" too; runs before the choice trained in float32.
    s.precision = o.value(QStringLiteral("precision")).toString(QStringLiteral("fp32"));
    s.loraRank = o.value(QStringLiteral("rank")).toInteger(s.loraRank);
    s.loraAlpha = o.value(QStringLiteral("alpha")).toDouble(s.loraAlpha);
    s.loraDropout = o.value(QStringLiteral("dropout")).toDouble(s.loraDropout);
    s.loraTargets = o.value(QStringLiteral("targets")).toString(s.loraTargets);
    s.loraInit = o.value(QStringLiteral("init")).toString(s.loraInit);
    s.loraLoss = o.value(QStringLiteral("loss")).toString(s.loraLoss);
    return s;
}

QString computeDeviceText(const RunSetup& s) {
    const bool bf16 = s.method != RunSetup::Method::Ptq && s.precision == QLatin1String("bf16");
    return bf16 ? QStringLiteral("%1 · BF16").arg(s.device) : s.device;
}

}  // namespace ql
