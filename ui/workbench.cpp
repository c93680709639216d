// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>
#include <QWidget>

#include "engine/api/demo_api.h"
#include "engine/api/export_api.h"
#include "engine/api/lora_api.h"
#include "engine/api/model_api.h"
#include "engine/api/ptq_api.h"
#include "projects/evalsuite_records.h"
#include "projects/project_file.h"
#include "engine/core/job_estimate.h"
#include "ui/background_call.h"
#include "ui/compare_view.h"
#include "ui/dashboard_view.h"
#include "ui/export_dialog.h"
#include "ui/inspector_controller.h"
#include "ui/layer_inspector_view.h"
#include "ui/log_panel.h"
#include "ui/model_panel.h"
#include "ui/project_explorer_panel.h"
#include "ui/recipe_editor.h"
#include "ui/run_controls.h"
#include "ui/run_launcher.h"
#include "ui/whatif_controller.h"
#include "ui/whatif_view.h"

namespace ql {
namespace {

constexpr int kMaxRecent = 8;
constexpr int kInfo = static_cast<int>(LogLevel::Info);
constexpr int kError = static_cast<int>(LogLevel::Error);

}  // namespace

Workbench::Workbench(QWidget* parentWidget) : QObject(parentWidget), m_parentWidget(parentWidget) {
    m_runner = new JobRunner(this);
    m_watcher = new ProjectWatcher(this);
    m_explorer = new ProjectExplorerPanel(parentWidget);
    m_explorer->setObjectName(QStringLiteral("projectExplorer"));
    m_modelPanel = new ModelPanel(parentWidget);
    m_modelPanel->setObjectName(QStringLiteral("modelPanel"));
    m_recipe = new RecipeEditor(parentWidget);
    m_recipe->setObjectName(QStringLiteral("recipeEditor"));
    m_controls = new RunControls(m_runner, parentWidget);
    m_controls->setObjectName(QStringLiteral("runControls"));
    m_dashboard = new DashboardView(parentWidget);
    m_dashboard->setObjectName(QStringLiteral("dashboard"));
    m_compare = new CompareView(parentWidget);
    m_compare->setObjectName(QStringLiteral("compareView"));
    m_log = new LogPanel(parentWidget);
    m_log->setObjectName(QStringLiteral("logPanel"));
    m_inspector = new LayerInspectorView(parentWidget);
    m_inspector->setObjectName(QStringLiteral("layerInspector"));
    m_inspectorController = new InspectorController(
        m_inspector, m_runner, m_recipe, [this] { return m_model; }, [this] { return m_project; }, this);
    connect(m_inspectorController, &InspectorController::message, this, [this](const QString& text, bool isError) {
        isError ? report(text) : info(text);
    });
    connect(m_explorer, &ProjectExplorerPanel::exportRequested, this, [this](qint64 id) { exportRun(id); });
    m_whatIf = new WhatIfView(parentWidget);
    m_whatIf->setObjectName(QStringLiteral("whatIf"));
    m_whatIfController = new WhatIfController(
        m_whatIf, m_runner, m_recipe, [this] { return m_model; }, [this] { return startRun(); }, this);
    connect(m_whatIfController, &WhatIfController::message, this, [this](const QString& text, bool isError) {
        isError ? report(text) : info(text);
    });

    connect(m_watcher, &ProjectWatcher::runsChanged, this, &Workbench::onRunsChanged);
    connect(m_watcher, &ProjectWatcher::seriesArrived, m_dashboard, &DashboardView::addSeries);
    connect(m_watcher, &ProjectWatcher::error, this, [this](const QString& m) { report(tr("Project file: %1").arg(m)); });
    connect(m_explorer, &ProjectExplorerPanel::selectionChanged, this, &Workbench::onSelectionChanged);
    connect(m_explorer, &ProjectExplorerPanel::resumeRequested, this, [this](qint64 id) {
        m_explorer->selectRuns({id});
        resumeSelectedRun();
    });
    connect(m_explorer, &ProjectExplorerPanel::deleteRequested, this, &Workbench::deleteRun);
    connect(m_modelPanel, &ModelPanel::layerFormatRequested, m_recipe, &RecipeEditor::setLayerFormat);
    auto* replan = new QTimer(this);
    replan->setSingleShot(true);
    replan->setInterval(300);  // one plan after a burst of edits, not one per keystroke
    connect(replan, &QTimer::timeout, this, &Workbench::replanRecipe);
    connect(m_recipe, &RecipeEditor::changed, replan, qOverload<>(&QTimer::start));
    connect(m_controls, &RunControls::startRequested, this, &Workbench::startRun);
    connect(m_controls, &RunControls::pauseRequested, this, &Workbench::pauseRun);
    connect(m_controls, &RunControls::resumeRequested, this, &Workbench::resumeSelectedRun);
    connect(m_controls, &RunControls::cancelRequested, this, &Workbench::cancelRun);
    connect(m_runner, &JobRunner::logMessage, m_log, &LogPanel::append);
    connect(m_runner, &JobRunner::runCreated, this, [this](qint64 id) {
        m_watcher->refresh();
        // The new run is shown at once: selected alone, so its curves fill the dashboard.
        QTimer::singleShot(300, this, [this, id] { m_explorer->selectRuns({id}); });
        emit runStarted(id);
    });
    connect(m_runner, &JobRunner::artifactProduced, this, [this](const QString& kind, const QString& path) {
        info(tr("%1 written: %2").arg(kind, path));
    });
    connect(m_runner, &JobRunner::finished, this, &Workbench::onJobFinished);
    m_controls->setStartEnabled(false, tr("Open a model first"));
}

Workbench::~Workbench() = default;

void Workbench::report(const QString& error) {
    m_lastError = error;
    m_log->append(kError, error);
    emit statusMessage(error, 10000);
}

void Workbench::info(const QString& text) {
    m_log->append(kInfo, text);
    emit statusMessage(text, 5000);
}

QString Workbench::demoProjectPath() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    return QDir(dir).filePath(QStringLiteral("demo.qlab"));
}

QStringList Workbench::recentProjects() const {
    return QSettings().value(QStringLiteral("recentProjects")).toStringList();
}

void Workbench::rememberRecent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentProjects")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) recent.removeLast();
    settings.setValue(QStringLiteral("recentProjects"), recent);
}

bool Workbench::openProject(const QString& path, bool create) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    try {
        if (create || !QFileInfo::exists(absolute)) {
            if (!create) throw std::runtime_error(tr("%1 does not exist").arg(absolute).toStdString());
            QDir().mkpath(QFileInfo(absolute).absolutePath());
            projects::ProjectFile::create(absolute.toStdString());
        } else {
            // Read-write when possible: that upgrades an old schema and marks dead runs interrupted.
            projects::ProjectFile::open(absolute.toStdString(), projects::OpenMode::PreferReadWrite);
        }
    } catch (const std::exception& e) {
        report(tr("Could not open the project: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    m_project = absolute;
    m_explorer->setProjectName(QFileInfo(absolute).fileName());
    m_explorer->setRuns({});
    m_watcher->setProject(absolute);
    rememberRecent(absolute);
    info(tr("Project %1 opened").arg(absolute));
    emit projectOpened(absolute);
    // The model the project last worked on, so reopening a project picks up where it was.
    try {
        const auto file = projects::ProjectFile::open(absolute.toStdString(), projects::OpenMode::ReadOnly);
        const auto models = file.models();
        if (!models.empty() && m_model.isEmpty()) {
            const auto& last = models.back();
            const QString name = QString::fromStdString(last.name);
            openModel(name == QLatin1String("demo") ? name : QString::fromStdString(file.model_path(last.id).string()));
        }
    } catch (const std::exception& e) {
        report(tr("The project's last model could not be found: %1").arg(QString::fromUtf8(e.what())));
    }
    return true;
}

void Workbench::openDemo() {
    if (!openProject(demoProjectPath(), !QFileInfo::exists(demoProjectPath()))) return;
    // The shipped model: nothing to train (a missing one is reported by the model panel).
    if (m_model != QLatin1String("demo")) openModel(QStringLiteral("demo"));
    m_recipe->applyQuickStart(QStringLiteral("NVFP4 QAD"));
}

bool Workbench::retrainDemo(qint64 steps) {
    if (m_project.isEmpty() && !openProject(demoProjectPath(), !QFileInfo::exists(demoProjectPath()))) return false;
    if (m_runner->isRunning()) {
        report(tr("Another run is in progress: wait for it or cancel it first"));
        return false;
    }
    const QString out = QString::fromStdString(retrained_demo_dir());
    info(tr("Retraining the demo model into %1 (10000 steps: 15 minutes to over an hour on two cores); its curves appear in the "
            "dashboard. The shipped model stays what \"demo\" opens.").arg(out));
    projects::ProjectRunInfo runInfo;
    runInfo.kind = "demo";
    runInfo.name = "Retrain the demo model";
    runInfo.writer.flush_interval = std::chrono::milliseconds(250);
    m_openAfterJob = out;
    DemoRequest request;
    request.force = true;
    request.steps = steps;
    request.command = "quantlab (File > Retrain the Demo Model)";
    m_runner->start(tr("Retraining the demo model"),
                    [request](JobSink& sink, const CancellationToken& cancel) { build_demo(request, sink, cancel); },
                    m_project, runInfo);
    emit showDashboardRequested();
    return true;
}

void Workbench::openModel(const QString& model) {
    m_model = model;
    m_modelPanel->setLoading(model);
    m_controls->setStartEnabled(false, tr("The model is still opening"));
    const std::string path = model.toStdString();
    backgroundCall<ModelSummary>(
        this, [path] { return inspect_model(path); },
        [this, model](const std::optional<ModelSummary>& summary, const QString& error) {
            if (model != m_model) return;  // another model was opened meanwhile
            if (!summary) {
                m_modelPanel->setLoadError(error);
                m_controls->setStartEnabled(false, tr("The model could not be opened"));
                report(tr("Could not open the model %1: %2").arg(model, error));
                return;
            }
            m_modelPanel->setModel(*summary);
            m_whatIf->setModel(*summary);
            double fpTokens = 0;
            const qint64 seqTokens = summary->config.max_positions > 0 ? summary->config.max_positions : 64;
            if (summary->is_demo) {
                try {
                    const DemoReport r = read_demo_record(summary->path);
                    fpTokens = static_cast<double>(r.steps) * static_cast<double>(r.batch_size) * static_cast<double>(seqTokens);
                } catch (const std::exception&) {
                }
            }
            m_recipe->setModelFacts(summary->parameter_count, fpTokens, seqTokens, summary->is_demo);
            m_recipe->setEncoder(summary->config.architecture == "bert");
            m_controls->setStartEnabled(true);
            info(tr("Model %1 opened: %2 quantizable layers").arg(model).arg(summary->layers.size()));
            emit modelOpened(model);
            replanRecipe();
        });
}

void Workbench::replanRecipe() {
    if (m_model.isEmpty() || !m_modelPanel->hasModel()) return;
    const QString json = m_recipe->recipeJson();
    if (json.isEmpty()) {
        m_recipe->setValidationMessage(m_recipe->problem(), true);
        return;
    }
    const int generation = ++m_planGeneration;
    const std::string model = m_model.toStdString(), text = json.toStdString();
    const QMap<QString, QString> overrides = m_recipe->layerFormats();
    backgroundCall<std::vector<LayerSummary>>(
        this, [model, text] { return plan_layer_formats(model, text, "the recipe editor"); },
        [this, generation, overrides](const std::optional<std::vector<LayerSummary>>& layers, const QString& error) {
            if (generation != m_planGeneration) return;  // a newer edit is being planned
            if (!layers) {
                m_recipe->setValidationMessage(error, true);
                m_controls->setStartEnabled(false, error);
                return;
            }
            m_modelPanel->setPlannedLayers(*layers, overrides);
            int quantized = 0;
            for (const LayerSummary& l : *layers) quantized += l.weight_format.empty() ? 0 : 1;
            const QString fits = tr("The recipe fits the model: %1 of %2 layers quantized.").arg(quantized).arg(layers->size());
            m_recipe->setValidationMessage(fits, false);
            m_controls->setStartEnabled(true);
            estimateRun(generation, fits);
        });
}

// The pre-flight estimate of a PTQ run with the recipe (engine/core/job_estimate.h): peak memory
// and time on this machine, beside the recipe's validation, before anything is started.
void Workbench::estimateRun(int generation, const QString& fits) {
    RunSetup setup;
    try {
        setup = m_recipe->setup();
    } catch (const std::exception&) {
        // An incomplete setup (no calibration or training data yet) has nothing to estimate;
        // Start names what is missing. This runs inside a Qt callback: nothing may escape it.
        return;
    }
    if (setup.method != RunSetup::Method::Ptq || setup.calibration.isEmpty()) return;
    PtqRequest req;
    req.model = m_model.toStdString();
    req.recipe = setup.recipeName.toStdString();
    req.recipe_json = setup.recipeJson.toStdString();
    req.calibration = setup.calibration.toStdString();
    req.samples = setup.calibrationSamples;
    req.seed = setup.seed;
    req.dry_run = true;
    // The run the workbench starts writes its checkpoint, block by block for a large model, so
    // the estimate is that of a run with an output folder (a dry run writes nothing there).
    req.out_dir = QDir(QDir::tempPath()).filePath(QStringLiteral("quantlab-estimate-not-written")).toStdString();
    req.force = true;  // only the estimate: nothing is replaced
    backgroundCall<JobEstimate>(
        this, [req] {
            NullJobSink sink;
            CancellationToken cancel;
            return run_ptq(req, sink, cancel).estimate;
        },
        [this, generation, fits](const std::optional<JobEstimate>& e, const QString&) {
            if (generation != m_planGeneration || !e) return;
            QString line = tr("PTQ estimate: peak %1, %2 free, about %3.")
                               .arg(QString::fromStdString(memory_text(e->peak_bytes)),
                                    QString::fromStdString(e->available_bytes > 0 ? memory_text(e->available_bytes) : "?"),
                                    QString::fromStdString(duration_text(e->seconds)));
            if (!e->fits()) line += QLatin1Char(' ') + tr("It will not fit: %1.").arg(QString::fromStdString(e->advice));
            m_recipe->setValidationMessage(fits + QLatin1Char('\n') + line, !e->fits());
        });
}

bool Workbench::startRun() {
    if (m_runner->isRunning()) return false;
    if (m_project.isEmpty()) {
        report(tr("Open or create a project first (File ▸ New Project)."));
        return false;
    }
    if (m_model.isEmpty()) {
        report(tr("Open a model first (File ▸ Open Model)."));
        return false;
    }
    try {
        const RunSetup setup = m_recipe->setup();
        LaunchPlan plan = planRun(setup, m_model, m_project);
        m_pausing = false;
        m_runner->start(plan.title, std::move(plan.job), m_project, plan.info);
        emit computeDeviceChanged(plan.device);
        info(tr("%1 started; output in %2").arg(plan.title, plan.outDir));
        emit showDashboardRequested();
        return true;
    } catch (const std::exception& e) {
        report(tr("The run could not start: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
}

void Workbench::pauseRun() {
    if (!m_runner->isRunning()) return;
    m_pausing = true;
    m_runner->cancel();
    info(tr("Pausing: the run stops after its next step and keeps a checkpoint."));
}

bool Workbench::resumeSelectedRun() {
    if (m_runner->isRunning()) return false;
    const QList<qint64> ids = m_explorer->selectedRuns();
    if (ids.size() != 1) {
        report(tr("Select one paused or interrupted run to resume."));
        return false;
    }
    const RunRow* run = m_explorer->run(ids.first());
    if (!run) return false;
    try {
        LaunchPlan plan = planResume(run->id, run->configJson);
        m_pausing = false;
        m_runner->start(tr("%1 (resumed)").arg(plan.title), std::move(plan.job), m_project, plan.info);
        emit computeDeviceChanged(plan.device);
        emit showDashboardRequested();
        return true;
    } catch (const std::exception& e) {
        report(tr("Run %1 cannot be resumed: %2").arg(run->id).arg(QString::fromUtf8(e.what())));
        return false;
    }
}

void Workbench::cancelRun() {
    if (!m_runner->isRunning()) return;
    m_pausing = false;
    m_runner->cancel();
    info(tr("Cancelling …"));
}

void Workbench::deleteRun(qint64 runId) {
    try {
        auto file = projects::ProjectFile::open(m_project.toStdString(), projects::OpenMode::ReadWrite);
        file.delete_run(runId);
        m_watcher->refresh();
        info(tr("Run %1 deleted").arg(runId));
    } catch (const std::exception& e) {
        report(tr("Run %1 could not be deleted: %2").arg(runId).arg(QString::fromUtf8(e.what())));
    }
}

bool Workbench::exportRun(qint64 runId, const std::optional<ExportChoice>& given) {
    const RunRow* run = m_explorer->run(runId);
    if (!run || m_runner->isRunning()) return false;
    const QString model = runModelFolder(run->kind, run->configJson);
    if (model.isEmpty() || !QFileInfo::exists(model)) {
        report(tr("Run %1 has no quantized checkpoint to export (%2)").arg(runId).arg(model.isEmpty() ? tr("no output recorded") : model));
        return false;
    }
    ExportChoice choice;
    if (given) {
        choice = *given;
    } else {
        ExportDialog dialog(QStringLiteral("#%1 %2").arg(runId).arg(run->name), QFileInfo(model).absolutePath(), m_parentWidget);
        if (is_lora_run(model.toStdString())) {
            // The merge preview evaluates on the run's own held-out data.
            const QJsonObject config = QJsonDocument::fromJson(run->configJson.toUtf8()).object();
            const QString data = config.value(QStringLiteral("eval_data")).toString();
            dialog.setLoraRun(model, data.isEmpty() ? config.value(QStringLiteral("data")).toString() : data);
        }
        if (dialog.exec() != QDialog::Accepted) return false;
        choice = dialog.choice();
    }
    if (is_lora_run(model.toStdString())) {
        const LoraExportRequest lora{model.toStdString(), choice.kind.toStdString(), choice.out.toStdString(), choice.force,
                                     choice.ggufType.toStdString(), "cpu"};
        const QString project = m_project;
        auto doctor = std::make_shared<DoctorReport>();
        return m_runner->start(
            tr("Export %1").arg(choice.kind),
            [lora, doctor](JobSink& sink, const CancellationToken& cancel) { *doctor = run_lora_export(lora, sink, cancel).doctor; },
            std::nullopt, {}, [this, project, runId, choice, doctor] {
                m_lastExportDoctor = *doctor;
                try {
                    auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadWrite);
                    file.add_artifact(runId, choice.kind.toStdString(), choice.out.toStdString());
                } catch (const std::exception& e) {
                    report(tr("Exported, but the project could not record it: %1").arg(QString::fromUtf8(e.what())));
                }
                info(tr("Exported run %1 as %2 to %3").arg(runId).arg(choice.kind, choice.out));
                emit exportFinished(choice.out);
            });
    }
    ExportRequest req;
    req.model = model.toStdString();
    req.as = choice.kind.toStdString();
    req.out = choice.out.toStdString();
    req.force = choice.force;
    req.gguf_type = choice.ggufType.toStdString();
    req.project = m_project.toStdString();
    req.run_id = runId;
    req.run_config_json = run->configJson.toStdString();
    const QString project = m_project;
    auto doctor = std::make_shared<DoctorReport>();
    return m_runner->start(
        tr("Export %1").arg(choice.kind),
        [req, project, doctor](JobSink& sink, const CancellationToken& cancel) mutable {
            // The report's curves: every series of the run, read here off the GUI thread.
            if (req.as == "report") {
                const auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
                for (const projects::MetricSeries& s : file.load_metrics(req.run_id))
                    req.series.push_back({s.name, s.steps, s.values});
                // The project's evaluation of this checkpoint (the report's "Evaluation" section).
                req.evaluations = projects::evaluations_of_model(project.toStdString(), req.model);
            }
            *doctor = run_export(req, sink, cancel).doctor;
        },
        std::nullopt, {}, [this, project, runId, choice, doctor] {
            m_lastExportDoctor = *doctor;
            try {
                auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadWrite);
                file.add_artifact(runId, choice.kind.toStdString(), choice.out.toStdString());
            } catch (const std::exception& e) {
                report(tr("Exported, but the project could not record it: %1").arg(QString::fromUtf8(e.what())));
            }
            info(tr("Exported run %1 as %2 to %3").arg(runId).arg(choice.kind, choice.out));
            emit exportFinished(choice.out);
        });
}

void Workbench::onJobFinished(JobRunner::Outcome outcome, const QString& message) {
    m_watcher->refresh();
    emit computeDeviceChanged(QString());
    switch (outcome) {
        case JobRunner::Outcome::Completed:
            m_lastError.clear();
            info(tr("%1 finished").arg(m_runner->title()));
            break;
        case JobRunner::Outcome::Cancelled:
            info(m_pausing ? tr("%1 paused: select it and press Resume to continue").arg(m_runner->title())
                           : tr("%1 cancelled").arg(m_runner->title()));
            break;
        case JobRunner::Outcome::Failed:
            report(tr("%1 failed: %2").arg(m_runner->title(), message));
            break;
    }
    if (!m_openAfterJob.isEmpty()) {
        const QString model = m_openAfterJob;
        m_openAfterJob.clear();
        if (outcome == JobRunner::Outcome::Completed) {
            openModel(model);
            m_recipe->applyQuickStart(QStringLiteral("NVFP4 QAD"));
        }
    }
    onSelectionChanged(m_explorer->selectedRuns());
}

void Workbench::onRunsChanged(const QVector<RunRow>& runs) {
    m_runs = runs;
    m_explorer->setRuns(runs);
    onSelectionChanged(m_explorer->selectedRuns());
    QList<QPair<QString, QString>> checkpoints;
    for (const RunRow& r : runs)
        if (r.status == QLatin1String("completed") &&
            (r.kind == QLatin1String("ptq") || r.kind == QLatin1String("qat") || r.kind == QLatin1String("qad"))) {
            const QString folder = runModelFolder(r.kind, r.configJson);
            if (!folder.isEmpty()) checkpoints.append({QStringLiteral("#%1 %2").arg(r.id).arg(r.name), folder});
        }
    m_inspector->setOverlayChoices(checkpoints);
    m_inspectorController->loadDivergenceRuns(runs);
}

void Workbench::onSelectionChanged(const QList<qint64>& ids) {
    QList<QPair<qint64, QString>> shown;
    QVector<RunRow> rows;
    for (qint64 id : ids)
        if (const RunRow* r = m_explorer->run(id)) {
            // Legends name runs short: number, method and recipe (the full name is in the explorer).
            shown.append({id, QStringLiteral("#%1 %2 %3").arg(id).arg(r->kind.toUpper(), r->recipe.isEmpty() ? r->name : r->recipe)});
            rows.push_back(*r);
        }
    const QList<qint64> added = m_dashboard->setRuns(shown);
    m_watcher->setWatchedRuns(ids);
    // A run that (re)appears on the dashboard gets its whole series again, whatever the watcher
    // sent while it was not shown (a chunk for a run not shown is dropped).
    if (!added.isEmpty()) m_watcher->reloadRuns(added);
    m_compare->setRuns(rows);
    bool resumable = false;
    if (rows.size() == 1) {
        const RunRow& r = rows.first();
        resumable = (r.status == QLatin1String("cancelled") || r.status == QLatin1String("interrupted")) &&
                    (r.kind == QLatin1String("qat") || r.kind == QLatin1String("qad"));
    }
    m_controls->setResumable(resumable);
}

}  // namespace ql
