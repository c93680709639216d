// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/run_launcher.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <stdexcept>

#include "engine/api/eval_api.h"
#include "engine/api/lora_api.h"
#include "engine/api/ptq_api.h"
#include "engine/api/train_api.h"

namespace ql {
namespace {

QString runsFolder(const QString& project) {
    const QFileInfo fi(project);
    return fi.absoluteDir().filePath(fi.completeBaseName() + QStringLiteral(".runs"));
}

void writeText(const QString& path, const QString& text) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text.toUtf8()) < 0 || !f.flush())
        throw std::runtime_error(QStringLiteral("cannot write %1: %2").arg(path, f.errorString()).toStdString());
}

TrainRequest trainRequest(const RunSetup& s, const QString& model, const QString& recipeFile, const QString& outDir) {
    TrainRequest r;
    r.mode = methodName(s.method).toStdString();
    r.model = model.toStdString();
    r.recipe = recipeFile.toStdString();
    r.data = s.trainData.toStdString();
    r.eval_data = s.evalData.toStdString();
    r.eval_pairs = s.evalPairs.toStdString();
    r.calibration = s.calibration.toStdString();
    r.calibration_samples = s.calibrationSamples;
    r.out_dir = outDir.toStdString();
    r.steps = s.steps;
    r.batch_size = s.batchSize;
    r.eval_every = s.evalEvery;
    r.eval_samples = s.evalSamples;
    // Checkpoints make Pause possible: cancelling saves one, Resume continues from it.
    r.checkpoint_every = std::max<qint64>(50, s.steps / 10);
    r.lr = s.lr;
    r.schedule = s.schedule.toStdString();
    r.warmup_steps = s.warmupSteps;
    r.fp_steps = s.fpSteps;
    r.final_lr_fraction = s.finalLrFraction;
    r.temperature = s.temperature;
    r.ce_weight = s.ceWeight;
    r.learned_scales = s.learnedScales;
    r.seed = s.seed;
    r.device = s.device.toStdString();
    r.precision = s.precision.toStdString();
    // The flight recorder is cheap enough to leave on (docs/BENCHMARKS.md): about 50 records a run.
    r.record_every = std::max<qint64>(1, s.steps / 50);
    return r;
}

// LoRA: adapters on the frozen base the recipe quantizes (engine/api/lora_api.h).
LoraTrainRequest loraRequest(const RunSetup& s, const QString& model, const QString& recipeFile, const QString& outDir) {
    LoraTrainRequest r;
    r.method = "lora";
    r.model = model.toStdString();
    r.recipe = recipeFile.toStdString();
    r.data = s.trainData.toStdString();
    r.eval_data = s.evalData.toStdString();
    r.calibration = s.calibration.toStdString();
    r.calibration_samples = s.calibrationSamples;
    r.out_dir = outDir.toStdString();
    r.loss = s.loraLoss.toStdString();
    r.rank = s.loraRank;
    r.alpha = s.loraAlpha;
    r.dropout = s.loraDropout;
    r.targets = s.loraTargets.toStdString();
    r.init = s.loraInit.toStdString();
    r.steps = s.steps;
    r.batch_size = s.batchSize;
    r.eval_every = s.evalEvery;
    r.eval_samples = s.evalSamples;
    r.checkpoint_every = std::max<qint64>(50, s.steps / 10);
    r.lr = s.lr;
    r.schedule = s.schedule.toStdString();
    r.warmup_steps = s.warmupSteps;
    r.final_lr_fraction = s.finalLrFraction;
    r.temperature = s.temperature;
    r.seed = s.seed;
    r.device = s.device.toStdString();
    return r;
}

LaunchPlan trainingPlan(const RunSetup& s, const QString& model, const QString& recipeFile, const QString& outDir,
                        bool resume) {
    LaunchPlan plan;
    if (s.method == RunSetup::Method::Lora) {
        LoraTrainRequest req = loraRequest(s, model, recipeFile, outDir);
        req.resume = resume;
        req.force = !resume;
        plan.title = QStringLiteral("LoRA %1").arg(s.recipeName);
        plan.job = [req](JobSink& sink, const CancellationToken& cancel) { run_lora_training(req, sink, cancel); };
        plan.outDir = outDir;
        plan.device = computeDeviceText(s);
        return plan;
    }
    TrainRequest req = trainRequest(s, model, recipeFile, outDir);
    req.resume = resume;
    req.force = !resume;
    plan.title = QStringLiteral("%1 %2").arg(methodName(s.method).toUpper(), s.recipeName);
    plan.job = [req](JobSink& sink, const CancellationToken& cancel) { run_training(req, sink, cancel); };
    plan.outDir = outDir;
    plan.device = computeDeviceText(s);
    return plan;
}

}  // namespace

LaunchPlan planRun(const RunSetup& s, const QString& model, const QString& project) {
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"));
    const QString kind = methodName(s.method);
    QDir runs(runsFolder(project));
    if (!runs.mkpath(QStringLiteral(".")))
        throw std::runtime_error(QStringLiteral("cannot create the folder %1").arg(runs.path()).toStdString());
    const QString outDir = runs.filePath(QStringLiteral("%1-%2").arg(kind, stamp));
    const QString recipeFile = runs.filePath(QStringLiteral("%1-%2.recipe.json").arg(kind, stamp));
    writeText(recipeFile, s.recipeJson);

    QJsonObject config = toJson(s);
    config.insert(QStringLiteral("model"), model);
    config.insert(QStringLiteral("recipe_file"), recipeFile);
    config.insert(QStringLiteral("out"), outDir);

    LaunchPlan plan;
    if (s.method == RunSetup::Method::Ptq) {
        PtqRequest req;
        req.model = model.toStdString();
        req.recipe = recipeFile.toStdString();
        req.calibration = s.calibration.toStdString();
        req.samples = s.calibrationSamples;
        req.out_dir = outDir.toStdString();
        req.seed = s.seed;
        req.device = s.device.toStdString();
        EvalRequest eval;
        eval.model = req.out_dir;
        eval.teacher = req.model;
        eval.data = req.calibration;
        eval.split = "validation";
        eval.seed = s.seed;
        eval.pairs = s.evalPairs.toStdString();
        eval.device = req.device;
        plan.title = QStringLiteral("PTQ %1").arg(s.recipeName);
        plan.job = [req, eval](JobSink& sink, const CancellationToken& cancel) {
            run_ptq(req, sink, cancel);
            // Accuracy and KL against the FP model on held-out data: what the compare view ranks.
            report_eval_metrics(sink, 0, run_eval(eval, sink, cancel));
        };
        plan.outDir = outDir;
        plan.device = computeDeviceText(s);
    } else {
        plan = trainingPlan(s, model, recipeFile, outDir, false);
    }
    plan.info.kind = kind.toStdString();
    plan.info.name = QStringLiteral("%1 %2").arg(kind.toUpper(), s.recipeName).toStdString();
    plan.info.model_name = model.toStdString();
    plan.info.model_path = resolved_model_folder(model.toStdString());
    plan.info.recipe_name = s.recipeName.toStdString();
    plan.info.recipe_json = s.recipeJson.toStdString();
    plan.info.config_json = QJsonDocument(config).toJson(QJsonDocument::Compact).toStdString();
    // Curves appear within a quarter second instead of the CLI's half.
    plan.info.writer.flush_interval = std::chrono::milliseconds(250);
    return plan;
}

LaunchPlan planResume(qint64 runId, const QString& configJson) {
    const QJsonObject config = QJsonDocument::fromJson(configJson.toUtf8()).object();
    const RunSetup s = runSetupFromJson(config);
    if (s.method == RunSetup::Method::Ptq)
        throw std::runtime_error("a PTQ run has no checkpoint to resume from: start it again instead");
    const QString outDir = config.value(QStringLiteral("out")).toString();
    const QString recipeFile = config.contains(QStringLiteral("recipe_file")) ? config.value(QStringLiteral("recipe_file")).toString()
                                                                            : config.value(QStringLiteral("recipe")).toString();
    if (outDir.isEmpty() || !QFileInfo::exists(QDir(outDir).filePath(QStringLiteral("checkpoint"))))
        throw std::runtime_error(QStringLiteral("run %1 has no checkpoint in %2 to resume from").arg(runId).arg(outDir).toStdString());
    LaunchPlan plan = trainingPlan(s, config.value(QStringLiteral("model")).toString(), recipeFile, outDir, true);
    plan.info.continue_run = runId;
    plan.info.writer.flush_interval = std::chrono::milliseconds(250);
    return plan;
}

QString runModelFolder(const QString& kind, const QString& configJson) {
    const QJsonObject config = QJsonDocument::fromJson(configJson.toUtf8()).object();
    const QString out = config.value(QStringLiteral("out")).toString();
    if (out.isEmpty()) return {};
    // ptq writes the checkpoint into its out folder; train into out/model; a LoRA run is exported from
    // its run folder (adapter and base record).
    if (kind == QLatin1String("lora") || kind == QLatin1String("qlora")) return out;
    return kind == QLatin1String("ptq") ? out : QDir(out).filePath(QStringLiteral("model"));
}

}  // namespace ql
