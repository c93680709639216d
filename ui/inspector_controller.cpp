// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/inspector_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <memory>
#include "engine/api/imatrix_api.h"

#include <nlohmann/json.hpp>

#include "engine/api/divergence_api.h"
#include "engine/api/divergence_json.h"
#include "engine/api/layer_stats_api.h"
#include "engine/api/model_api.h"
#include "engine/api/ptq_api.h"
#include "engine/api/sensitivity_api.h"
#include "projects/divergence_records.h"
#include "projects/layer_stats_records.h"
#include "projects/project_file.h"
#include "ui/background_call.h"
#include "ui/job_runner.h"
#include "ui/importance_panel.h"
#include "ui/layer_inspector_view.h"
#include "ui/recipe_editor.h"

namespace ql {

InspectorController::InspectorController(LayerInspectorView* view, JobRunner* runner, RecipeEditor* recipe,
                                         std::function<QString()> model, std::function<QString()> project, QObject* parent)
    : QObject(parent), m_view(view), m_runner(runner), m_recipe(recipe), m_model(std::move(model)), m_project(std::move(project)) {
    connect(view, &LayerInspectorView::computeRequested, this, &InspectorController::computeStatistics);
    connect(view, &LayerInspectorView::sensitivityRequested, this, &InspectorController::measureSensitivity);
    connect(view, &LayerInspectorView::compareRequested, this, &InspectorController::computeOverlay);
    connect(view, &LayerInspectorView::channelRequested, this, &InspectorController::showChannel);
    connect(view->importancePanel(), &ImportancePanel::openRequested, this, &InspectorController::openImportance);
    connect(view->importancePanel(), &ImportancePanel::computeRequested, this, &InspectorController::computeImportance);
    connect(view, &LayerInspectorView::divergenceRequested, this, &InspectorController::measureDivergence);
}

void InspectorController::openImportance(const QString& path) {
    ImportancePanel* panel = m_view->importancePanel();
    panel->setStatus(tr("Reading %1…").arg(QFileInfo(path).fileName()));
    backgroundCall<ImatrixReport>(
        this, [path] { return imatrix_file_statistics(path.toStdString()); },
        [this, panel, path](const std::optional<ImatrixReport>& r, const QString& error) {
            if (!r) {
                panel->setStatus(error);
                emit message(error, true);
                return;
            }
            panel->setReport(*r, QFileInfo(path).fileName());
        });
}

bool InspectorController::computeImportance() {
    if (m_runner->isRunning() || m_model().isEmpty() || m_project().isEmpty()) {
        emit message(tr("Open a model (and let the running job finish) before collecting an importance matrix."), true);
        return false;
    }
    ImatrixRequest req;
    req.model = m_model().toStdString();
    req.calibration = m_recipe->setupCalibration().toStdString();
    const QFileInfo project(m_project());
    QDir dir(project.absoluteDir().filePath(project.completeBaseName() + QStringLiteral(".runs")));
    if (!dir.mkpath(QStringLiteral("."))) {
        emit message(tr("Cannot create %1").arg(dir.path()), true);
        return false;
    }
    const QString out = dir.filePath(QStringLiteral("imatrix-%1.gguf")
                                         .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"))));
    req.out = out.toStdString();
    auto result = std::make_shared<ImatrixReport>();
    projects::ProjectRunInfo info;
    info.kind = "imatrix";
    info.name = "Importance matrix";
    info.model_name = req.model;
    info.model_path = resolved_model_folder(req.model);
    m_view->importancePanel()->setStatus(tr("Collecting on %1…").arg(QString::fromStdString(req.calibration)));
    return m_runner->start(
        tr("Importance matrix"),
        [req, result](JobSink& sink, const CancellationToken& cancel) { *result = run_imatrix(req, sink, cancel); },
        m_project(), info, [this, result, out] { m_view->importancePanel()->setReport(*result, QFileInfo(out).fileName()); });
}

QString InspectorController::writeRecipeFile(const QString& stem) const {
    const QFileInfo project(m_project());
    QDir dir(project.absoluteDir().filePath(project.completeBaseName() + QStringLiteral(".runs")));
    if (!dir.mkpath(QStringLiteral("."))) throw std::runtime_error("cannot create " + dir.path().toStdString());
    const QString path = dir.filePath(QStringLiteral("%1-%2.recipe.json")
                                          .arg(stem, QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"))));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(m_recipe->recipeJson().toUtf8()) < 0)
        throw std::runtime_error("cannot write " + path.toStdString());
    return path;
}

bool InspectorController::computeStatistics() {
    if (m_runner->isRunning() || m_model().isEmpty() || m_project().isEmpty()) {
        emit message(tr("Open a model (and let the running job finish) before computing statistics."), true);
        return false;
    }
    LayerStatsRequest req;
    req.model = m_model().toStdString();
    try {
        // A quantized checkpoint carries its own recipe; an FP model gets the editor's.
        if (!QFileInfo::exists(QDir(m_model()).filePath(QStringLiteral("quantlab_quant.json"))))
            req.recipe = writeRecipeFile(QStringLiteral("stats")).toStdString();
    } catch (const std::exception& e) {
        emit message(QString::fromUtf8(e.what()), true);
        return false;
    }
    req.calibration = m_recipe->setupCalibration().toStdString();
    auto result = std::make_shared<LayerStatsReport>();
    projects::ProjectRunInfo info;
    info.kind = "stats";
    info.name = "Layer statistics";
    info.model_name = req.model;
    info.model_path = resolved_model_folder(req.model);
    if (!req.recipe.empty()) std::tie(info.recipe_name, info.recipe_json) = recipe_name_and_json(req.recipe);
    const QString project = m_project();
    return m_runner->start(
        tr("Layer statistics"),
        [req, result](JobSink& sink, const CancellationToken& cancel) { *result = run_layer_stats(req, sink, cancel); },
        project, info, [this, result, project] {
            m_view->setReport(*result);
            // The full statistics go into the project with the run, off the GUI thread.
            const qint64 run = m_runner->runId();
            backgroundCall<bool>(
                this,
                [project, run, result] {
                    auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadWrite);
                    file.add_layer_stats(run, projects::to_project_records(*result));
                    return true;
                },
                [this](const std::optional<bool>& ok, const QString& error) {
                    if (!ok) emit message(tr("The statistics could not be stored in the project: %1").arg(error), true);
                });
        });
}

bool InspectorController::measureSensitivity(double bitsBudget) {
    if (m_runner->isRunning() || m_model().isEmpty()) return false;
    SensitivityRequest req;
    req.model = m_model().toStdString();
    try {
        // The editor's recipe is the cheap candidate; FP8 is the safe one the search may spend bits on.
        req.recipes = {writeRecipeFile(QStringLiteral("sensitivity")).toStdString(), "FP8_DEFAULT"};
    } catch (const std::exception& e) {
        emit message(QString::fromUtf8(e.what()), true);
        return false;
    }
    req.calibration = m_recipe->setupCalibration().toStdString();
    req.bits_budget = bitsBudget;
    auto result = std::make_shared<SensitivityReport>();
    projects::ProjectRunInfo info;
    info.kind = "sensitivity";
    info.name = "Layer sensitivity";
    info.model_name = req.model;
    info.model_path = resolved_model_folder(req.model);
    return m_runner->start(
        tr("Sensitivity"),
        [req, result](JobSink& sink, const CancellationToken& cancel) { *result = run_sensitivity(req, sink, cancel); },
        m_project(), info, [this, result] { m_view->setSensitivity(*result); });
}

bool InspectorController::computeOverlay(const QString& modelFolder) {
    if (m_runner->isRunning()) {
        emit message(tr("A job is running; choose the overlay again when it has finished."), true);
        return false;
    }
    LayerStatsRequest req;
    req.model = modelFolder.toStdString();
    req.formats = {m_view->currentFormat().isEmpty() ? std::string("nvfp4") : m_view->currentFormat().toStdString()};
    auto result = std::make_shared<LayerStatsReport>();
    const QString label = QFileInfo(modelFolder).fileName() == QLatin1String("model")
                              ? QFileInfo(QFileInfo(modelFolder).absolutePath()).fileName()
                              : QFileInfo(modelFolder).fileName();
    return m_runner->start(
        tr("Statistics of %1").arg(label),
        [req, result](JobSink& sink, const CancellationToken& cancel) { *result = run_layer_stats(req, sink, cancel); },
        std::nullopt, {}, [this, result, label] { m_view->setCompareReport(*result, label); });
}

void InspectorController::showChannel(const QString& layer, int channel) {
    const std::string model = m_model().toStdString(), name = layer.toStdString();
    backgroundCall<TensorStatistics>(
        this,
        [model, name, channel] {
            const std::vector<float> row = layer_weight_row(model, name, channel);
            return tensor_statistics(row.data(), 1, static_cast<int64_t>(row.size()));
        },
        [this, channel](const std::optional<TensorStatistics>& stats, const QString& error) {
            if (stats)
                m_view->setChannelStatistics(channel, *stats);
            else
                emit message(error, true);
        });
}

bool InspectorController::measureDivergence(const QString& checkpointFolder) {
    if (m_runner->isRunning() || m_model().isEmpty() || m_project().isEmpty()) {
        emit message(tr("Open a model (and let the running job finish) before measuring the divergence."), true);
        return false;
    }
    if (QFileInfo::exists(QDir(m_model()).filePath(QStringLiteral("quantlab_quant.json")))) {
        emit message(tr("The open model is a quantized checkpoint: open its full-precision model and choose the checkpoint "
                        "under Quantized."),
                     true);
        return false;
    }
    DivergenceRequest req;
    req.model = m_model().toStdString();
    try {
        if (checkpointFolder.isEmpty())
            req.recipe = writeRecipeFile(QStringLiteral("divergence")).toStdString();
        else
            req.quantized = checkpointFolder.toStdString();
    } catch (const std::exception& e) {
        emit message(QString::fromUtf8(e.what()), true);
        return false;
    }
    req.data = m_recipe->setupCalibration().toStdString();
    req.samples = m_divergenceSamples;
    projects::ProjectRunInfo info;
    info.kind = "divergence";
    info.model_name = req.model;
    info.model_path = resolved_model_folder(req.model);
    if (!req.recipe.empty()) {
        std::tie(info.recipe_name, info.recipe_json) = recipe_name_and_json(req.recipe);
        info.name = "Divergence of " + info.recipe_name;
    } else {
        info.name = "Divergence of " + req.quantized;
    }
    info.config_json = nlohmann::json({{"model", req.model}, {"recipe", req.recipe}, {"quantized", req.quantized},
                                       {"data", req.data}, {"samples", req.samples}})
                           .dump();
    return m_runner->start(
        tr("Depth and token divergence"),
        [req](JobSink& sink, const CancellationToken& cancel) {
            const DivergenceReport r = run_divergence(req, sink, cancel);
            report_divergence_metrics(sink, r);
            // Stored with the run before it completes, as quantlab-cli divergence --project does.
            if (auto* recorder = dynamic_cast<projects::ProjectRunRecorder*>(&sink))
                recorder->append_layer_stats({projects::divergence_record(divergence_report_json(r).dump())});
        },
        m_project(), info);
}

void InspectorController::loadDivergenceRuns(const QVector<RunRow>& runs) {
    const QString project = m_project();
    if (project != m_divergenceProject) {
        m_divergence.clear();
        m_divergenceShown.clear();
        m_divergenceProject = project;
    }
    QList<qint64> ids;
    QHash<qint64, QString> labels;
    for (const RunRow& r : runs)
        if (r.kind == QLatin1String("divergence") && r.status == QLatin1String("completed")) {
            ids << r.id;
            labels.insert(r.id, r.recipe);
        }
    std::sort(ids.begin(), ids.end());
    if (ids == m_divergenceShown) return;
    QList<qint64> missing;
    for (qint64 id : ids)
        if (!m_divergence.contains(id)) missing << id;
    auto show = [this, ids] {
        QList<DivergenceRun> list;
        for (qint64 id : ids)
            if (m_divergence.contains(id)) list << m_divergence.value(id);
        m_divergenceShown = ids;
        m_view->setDivergenceRuns(list);
    };
    if (missing.isEmpty()) {
        show();
        return;
    }
    backgroundCall<QList<DivergenceRun>>(
        this,
        [project, missing, labels] {
            const auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
            QList<DivergenceRun> read;
            for (qint64 id : missing) {
                const std::optional<std::string> text = projects::divergence_report_text(file.layer_stats(id));
                if (!text) continue;  // not stored (yet): asked again with the next run list
                DivergenceRun run;
                run.id = id;
                run.report = parse_divergence_report(*text, project.toStdString() + " run " + std::to_string(id));
                // "#12 MXFP4", or for a checkpoint its folder ("qad/model" -> "qad") and recipe.
                QString what = labels.value(id);
                if (what.isEmpty()) {
                    QFileInfo folder(QString::fromStdString(run.report.quantized));
                    if (folder.fileName() == QLatin1String("model")) folder = QFileInfo(folder.absolutePath());
                    what = QStringLiteral("%1 (%2)").arg(folder.fileName(), QString::fromStdString(run.report.recipe));
                }
                run.label = QStringLiteral("#%1 %2").arg(id).arg(what);
                read << run;
            }
            return read;
        },
        [this, project, show](const std::optional<QList<DivergenceRun>>& read, const QString& error) {
            if (project != m_divergenceProject) return;
            if (!read) {
                emit message(tr("The divergence runs could not be read: %1").arg(error), true);
                return;
            }
            for (const DivergenceRun& r : *read) m_divergence.insert(r.id, r);
            show();
        });
}

}  // namespace ql
