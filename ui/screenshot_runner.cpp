// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/screenshot_runner.h"

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTabWidget>
#include <QLineEdit>
#include <QImage>
#include <QLabel>
#include <QPixmap>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <stdexcept>
#include <limits>
#include <memory>

#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "projects/experiment_report.h"
#include "projects/project_file.h"
#include "ui/block_walkthrough_panel.h"
#include "ui/export_doctor_view.h"
#include "ui/compare_view.h"
#include "ui/depth_view.h"
#include "ui/experiment_result_panel.h"
#include "ui/evaluation_view.h"
#include "ui/experiments_view.h"
#include "plots/interval_plot.h"
#include "ui/flight_recorder_panel.h"
#include "ui/token_explorer_view.h"
#include "ui/dashboard_view.h"
#include "ui/importance_panel.h"
#include "ui/inspector_controller.h"
#include "ui/job_runner.h"
#include "ui/layer_inspector_view.h"
#include "ui/recipe_editor.h"
#include "ui/whatif_controller.h"
#include "ui/whatif_view.h"
#include "plots/bar_chart.h"
#include "ui/model_panel.h"
#include "ui/project_explorer_panel.h"
#include "ui/recipe_editor.h"
#include "ui/workbench.h"
#include "ui/format_explorer_view.h"
#include "ui/generate_view.h"
#include "ui/run_controls.h"
#include "ui/run_launcher.h"
#include "ui/main_window.h"
#include "ui/palette_quantizer.h"
#include "ui/theme_manager.h"

namespace ql {
namespace {

// Settle time after a change: layouts, queued replots and style polish all run first.
constexpr int kSettleMs = 250;

ScreenshotRunner::Shot explorerShot(const QString& file, const QString& format, ThemeManager::Theme theme,
                                    SampleKind kind, uint32_t seed,
                                    std::function<void(FormatExplorerView&)> extra = {}) {
    return {file, [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("format-explorer"));
                FormatExplorerView* view = w.formatExplorer();
                view->setScaleMode(FormatExplorerView::ScaleMode::Auto);
                view->selectFormat(format);
                view->walkthrough()->setTensorAmax(std::numeric_limits<float>::quiet_NaN());
                view->walkthrough()->generate(kind, seed);
                view->walkthrough()->selectElement(2);
                if (extra) extra(*view);
            }};
}

// Selects the project's runs of `kinds` (all when empty) and shows `view`.
ScreenshotRunner::Shot workbenchShot(const QString& file, const QString& view, ThemeManager::Theme theme,
                                     const QStringList& kinds) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(view);
                QList<qint64> ids;
                for (const RunRow& r : w.workbench()->explorer()->runs())
                    if ((kinds.isEmpty() || kinds.contains(r.kind)) && r.status == QLatin1String("completed")) ids << r.id;
                w.workbench()->explorer()->selectRuns(ids);
            },
            [=](MainWindow& w) {
                Workbench* wb = w.workbench();
                if (!wb->modelPanel()->hasModel()) return false;
                if (view != QLatin1String("dashboard")) return true;
                // Every selected run's loss or eval curve has arrived.
                for (qint64 id : wb->dashboard()->runs())
                    if (wb->dashboard()->pointCount(id, QStringLiteral("train/loss")) == 0 &&
                        wb->dashboard()->pointCount(id, QStringLiteral("eval/exact_match")) == 0)
                        return false;
                return true;
            }};
}

// The Evaluation view on the evaluation runs of `evaluation.qlab` beside the open project
// (scripts/screenshots records them with quantlab-cli evalsuite --project), every stored run
// ticked and compared, the first the baseline, on tab `tab`. Its own project, as the Experiments
// view's.
ScreenshotRunner::Shot evaluationShot(const QString& file, const QString& tab, ThemeManager::Theme theme) {
    return {file, [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("evaluation"));
                EvaluationView* v = w.evaluationView();
                const QString project = QFileInfo(w.workbench()->projectPath()).dir().filePath(QStringLiteral("evaluation.qlab"));
                if (!QFileInfo::exists(project)) throw std::runtime_error("no " + project.toStdString());
                v->setProject(project);
                for (qint64 id : v->storedRunIds()) v->checkStoredRun(id);
                if (!v->compareStored()) throw std::runtime_error(v->statusText().toStdString());
                v->showTab(tab);
            }};
}

// The Experiments view on a finished experiment: `experiments.qlab` beside the open project
// (scripts/screenshots makes it with quantlab-cli experiment run TEMPLATE --replicates R
// --eval-samples N, so the view, set the same way, finds it), on plot tab `tab` with the run of
// `cell` selected. Its own project, so the other shots' project keeps only its own runs.
// An encoder's form of the template (`sentences` non-empty): the open model with the view's Data
// and Pairs fields set as `experiment run --model M --data S --pairs P` was.
ScreenshotRunner::Shot experimentsShot(const QString& file, const QString& templateName, int replicates, int evalSamples,
                                       const QString& tab, const QString& cell, ThemeManager::Theme theme,
                                       const QString& sentences = {}, const QString& pairs = {}) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("experiments"));
                ExperimentsView* v = w.experiments();
                const QString project =
                    QFileInfo(w.workbench()->projectPath()).dir().filePath(QStringLiteral("experiments.qlab"));
                if (!QFileInfo::exists(project)) throw std::runtime_error("no " + project.toStdString());
                v->setProject(project);
                if (!v->loadExperiment(templateName)) throw std::runtime_error(v->lastError().toStdString());
                if (!sentences.isEmpty()) {
                    if (w.workbench()->modelPath().isEmpty()) throw std::runtime_error("the project names no model");
                    v->setModel(w.workbench()->modelPath());
                    v->setData(sentences);
                    v->setPairs(pairs);
                    if (!v->lastError().isEmpty()) throw std::runtime_error(v->lastError().toStdString());
                }
                v->setReplicates(replicates);
                v->setEvalSamples(evalSamples);
            },
            [=](MainWindow& w) {
                ExperimentResultPanel* r = w.experiments()->resultPanel();
                if (r->cellKeys().isEmpty()) return false;
                // The planned-runs table is re-read in the background after the overrides: a shot
                // taken before that showed the finished results beside "queued" rows.
                if (!w.experiments()->progressText().endsWith(QStringLiteral(" 0 queued"))) return false;
                for (int i = 0; i < r->tabs()->count(); ++i)
                    if (r->tabs()->tabText(i) == tab) r->tabs()->setCurrentIndex(i);
                if (!cell.isEmpty() && r->selectedCell() != cell) r->selectCell(cell);
                return true;
            }};
}

// The Experiments view on experiment `name` as the open project records it: its recorded spec
// (with the --model / --data / --pairs / --steps overrides it ran with) is loaded as an
// experiment file, so the view finds exactly that experiment's runs, whatever the invocation.
// On plot tab `tab` ("" = the one the experiment was made for), the run of `cell` selected,
// showing `metric` ("" = the experiment's first).
ScreenshotRunner::Shot recordedExperimentShot(const QString& file, const QString& name, const QString& tab,
                                              const QString& cell, const QString& metric, ThemeManager::Theme theme) {
    // The spec file lives as long as the shot: the view re-reads it when a field changes.
    auto specDir = std::make_shared<QTemporaryDir>();
    // The metrics in the experiment's order: the shot shows its first (the panel otherwise keeps
    // the metric of the experiment shown before).
    auto metrics = std::make_shared<QStringList>();
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("experiments"));
                const QString project = w.workbench()->projectPath();
                if (project.isEmpty()) throw std::runtime_error("--screenshot-experiment needs a project (PROJECT.qlab)");
                const projects::ProjectFile db = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
                const projects::ExperimentRecord record = db.experiment(projects::find_experiment(db, name.toStdString()));
                // Named as the experiment: the view's experiment box shows the file name.
                const QString spec = QDir(specDir->path()).filePath(name + QStringLiteral(".json"));
                QFile out(spec);
                if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
                    out.write(QByteArray::fromStdString(record.spec_json)) != static_cast<qint64>(record.spec_json.size()))
                    throw std::runtime_error("cannot write " + spec.toStdString());
                out.close();
                metrics->clear();
                if (!metric.isEmpty()) *metrics << metric;
                for (const auto& m : nlohmann::json::parse(record.spec_json).value("metrics", nlohmann::json::array()))
                    if (m.is_string()) *metrics << QString::fromStdString(m.get<std::string>());
                ExperimentsView* v = w.experiments();
                v->setProject(project);
                if (!v->loadExperiment(spec)) throw std::runtime_error(v->lastError().toStdString());
            },
            [=](MainWindow& w) {
                ExperimentResultPanel* r = w.experiments()->resultPanel();
                if (r->cellKeys().isEmpty()) return false;
                if (!w.experiments()->progressText().contains(QStringLiteral(" 0 queued"))) return false;
                for (const QString& m : *metrics)
                    if (r->setMetric(m)) break;
                for (int i = 0; i < r->tabs()->count(); ++i)
                    if (r->tabs()->tabText(i) == tab) r->tabs()->setCurrentIndex(i);
                if (!cell.isEmpty() && r->selectedCell() != cell) r->selectCell(cell);
                return true;
            }};
}

// The layer inspector on tab `tab`; the statistics (and for the sensitivity tab the sensitivity)
// are computed by the first shot that needs them.
ScreenshotRunner::Shot inspectorShot(const QString& file, const QString& tab, ThemeManager::Theme theme,
                                     const QString& layer = {}, const QString& format = QStringLiteral("nvfp4"),
                                     bool activations = false) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("inspector"));
                Workbench* wb = w.workbench();
                wb->explorer()->selectRuns({});
                if (!wb->inspector()->hasReport() && !wb->runner()->isRunning()) wb->inspectorController()->computeStatistics();
                wb->inspector()->showTab(tab);
            },
            [=](MainWindow& w) {
                Workbench* wb = w.workbench();
                if (wb->runner()->isRunning()) return false;
                LayerInspectorView* v = wb->inspector();
                if (!v->hasReport()) {
                    if (wb->modelPanel()->hasModel()) wb->inspectorController()->computeStatistics();
                    return false;
                }
                if (tab == QLatin1String("sensitivity") && v->sensitivityChart()->categoryCount() == 0) {
                    wb->inspectorController()->measureSensitivity(5.0);
                    return false;
                }
                const QString l = layer.isEmpty() ? QString::fromStdString(v->report()->layers.front().layer) : layer;
                v->selectLayer(l);
                v->selectFormat(format);
                v->showActivations(activations);
                return true;
            }};
}

// The layer inspector's Depth or Tokens tab with the project's divergence runs (every run ticked
// on the Depth tab; the worst token selected on the Tokens tab).
ScreenshotRunner::Shot divergenceShot(const QString& file, const QString& tab, ThemeManager::Theme theme) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("inspector"));
                w.workbench()->explorer()->selectRuns({});
                w.workbench()->inspector()->showTab(tab);
            },
            [=](MainWindow& w) {
                LayerInspectorView* v = w.workbench()->inspector();
                QList<qint64> ids;
                for (const RunRow& r : w.workbench()->explorer()->runs())
                    if (r.kind == QLatin1String("divergence") && r.status == QLatin1String("completed")) ids << r.id;
                if (ids.isEmpty() || v->depthView()->blockTable()->rowCount() == 0) return false;
                if (tab == QLatin1String("depth")) v->depthView()->showRuns(ids);
                if (tab == QLatin1String("tokens") && v->tokenView()->selectedToken() < 0) v->tokenView()->selectToken(0);
                return true;
            }};
}

// The dashboard's flight-recorder heatmap of the project's last QAT/QAD run, showing `quantity`.
ScreenshotRunner::Shot flightShot(const QString& file, const QString& quantity, ThemeManager::Theme theme) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("dashboard"));
                qint64 last = 0;
                for (const RunRow& r : w.workbench()->explorer()->runs())
                    if ((r.kind == QLatin1String("qat") || r.kind == QLatin1String("qad")) && r.status == QLatin1String("completed"))
                        last = r.id;
                w.workbench()->explorer()->selectRuns({last});
                w.workbench()->dashboard()->flightRecorder()->setQuantity(quantity);
            },
            [=](MainWindow& w) {
                FlightRecorderPanel* f = w.workbench()->dashboard()->flightRecorder();
                if (!f->hasData()) return false;
                f->flush();
                return true;
            }};
}

// The inspector's importance tab with an importance matrix collected from the demo's calibration
// data (a job run by the first shot that needs it), `entry` selected.
ScreenshotRunner::Shot importanceShot(const QString& file, ThemeManager::Theme theme, const QString& entry) {
    return {file,
            [=](MainWindow& w) {
                w.themeManager()->apply(theme);
                w.showView(QStringLiteral("inspector"));
                Workbench* wb = w.workbench();
                wb->explorer()->selectRuns({});
                wb->inspector()->showTab(QStringLiteral("importance"));
            },
            [=](MainWindow& w) {
                Workbench* wb = w.workbench();
                if (wb->runner()->isRunning() || !wb->modelPanel()->hasModel()) return false;
                ImportancePanel* p = wb->inspector()->importancePanel();
                if (!p->hasReport()) {
                    wb->inspectorController()->computeImportance();
                    return false;
                }
                p->selectEntry(entry);
                return true;
            }};
}

// The What-if view comparing `kv` and `rotation`; the comparison runs once for all shots that ask
// for the same choice.
ScreenshotRunner::Shot whatIfShot(const QString& file, ThemeManager::Theme theme, const QString& kv, const QString& rotation,
                                  const QString& tensor, const QString& calibration) {
    auto wants = [kv, rotation](WhatIfView* v) {
        if (!v->hasReport()) return true;
        const WhatIfReport& r = v->report();
        return QString::fromStdString(r.recipe_name).endsWith(QStringLiteral("-kv_%1-rotate_%2").arg(kv, rotation)) == false;
    };
    ScreenshotRunner::Shot shot{file,
                                [=](MainWindow& w) {
                                    w.themeManager()->apply(theme);
                                    w.showView(QStringLiteral("whatif"));
                                    if (!calibration.isEmpty())
                                        if (auto* c = w.workbench()->recipeEditor()->findChild<QLineEdit*>(QStringLiteral("calibration")))
                                            c->setText(calibration);
                                    WhatIfView* v = w.workbench()->whatIf();
                                    v->setKvCache(kv);
                                    v->setRotation(rotation);
                                },
                                [=](MainWindow& w) {
                                    Workbench* wb = w.workbench();
                                    WhatIfView* v = wb->whatIf();
                                    if (wb->runner()->isRunning() || !wb->modelPanel()->hasModel()) return false;
                                    if (wants(v)) {
                                        wb->whatIfController()->compare(kv, rotation, 8);
                                        return false;
                                    }
                                    if (!tensor.isEmpty()) v->selectTensor(tensor);
                                    return true;
                                }};
    shot.timeoutMs = 600000;  // two quick PTQ runs and two evaluations on a busy machine
    return shot;
}

}  // namespace

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::whatIfShots(const QString& stem, const QString& kvCache,
                                                                  const QString& rotation, const QString& tensor,
                                                                  const QString& calibration) {
    return {whatIfShot(stem + QStringLiteral(".png"), ThemeManager::Theme::Light, kvCache, rotation, tensor, calibration),
            whatIfShot(stem + QStringLiteral("-dark.png"), ThemeManager::Theme::Dark, kvCache, rotation, tensor, calibration)};
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::progressShots(const QString& stem, const QString& preset,
                                                                    const QString& calibration, qint64 done) {
    auto started = std::make_shared<bool>(false);  // one start: a refused run is not retried
    // The run goes into a project of its own, not the demo project a model folder opens with.
    auto project = std::make_shared<QTemporaryDir>();
    Shot shot{stem + QStringLiteral(".png"),
              [=](MainWindow& w) {
                  w.themeManager()->apply(ThemeManager::Theme::Light);
                  if (!project->isValid() || !w.workbench()->openProject(project->filePath(QStringLiteral("progress.qlab")), true))
                      throw std::runtime_error("cannot create a project for the run");
                  w.showView(QStringLiteral("workbench"));
              },
              [=](MainWindow& w) {
                  // The model opens in the background: start once it is there, then wait for the
                  // progress to move and the time left to be known.
                  Workbench* wb = w.workbench();
                  if (!wb->modelPanel()->hasModel()) return false;
                  JobRunner* runner = wb->runner();
                  if (!*started) {
                      *started = true;
                      // Set once the model is open: opening it sets the editor up for the model.
                      if (!wb->recipeEditor()->setPreset(preset))
                          std::fprintf(stderr, "quantlab: %s.png: unknown preset '%s'\n", qPrintable(stem), qPrintable(preset));
                      wb->recipeEditor()->setCalibration(calibration);
                      if (!wb->startRun())
                          std::fprintf(stderr, "quantlab: %s.png: the run did not start: %s\n", qPrintable(stem), qPrintable(wb->lastError()));
                      w.showView(QStringLiteral("workbench"));  // a start shows the dashboard: back to the recipe and its estimate
                      return false;
                  }
                  if (!runner->isRunning()) return true;  // refused, failed or done: show what the window says
                  // The project records the model when the run starts, which opens it again and
                  // resets the editor: show the running setup and its estimate again.
                  RecipeEditor* editor = wb->recipeEditor();
                  auto* field = editor->findChild<QLineEdit*>(QStringLiteral("calibration"));
                  if (field && field->text() != calibration) {
                      editor->setPreset(preset);
                      editor->setCalibration(calibration);
                  }
                  auto* validation = editor->findChild<QLabel*>(QStringLiteral("recipeValidation"));
                  const ProgressEstimate& p = runner->progress();
                  return p.done() >= done && p.eta_s().has_value() &&
                         wb->runControls()->progressText().contains(QStringLiteral("RSS")) &&
                         (!validation || validation->text().contains(QStringLiteral("estimate")));
              },
              3600000};  // a 1 B model's first block on 2 cores
    return {shot};
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::experimentShots(const QString& name, const QString& stem,
                                                                      const QString& tab, const QString& cell,
                                                                      const QString& metric) {
    return {recordedExperimentShot(stem + QStringLiteral(".png"), name, tab, cell, metric, ThemeManager::Theme::Light)};
}

ScreenshotRunner::ScreenshotRunner(MainWindow* window, const QString& directory, QObject* parent)
    : QObject(parent), m_window(window), m_directory(directory), m_shots(defaultShots()) {}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::defaultShots() {
    using T = ThemeManager::Theme;
    std::vector<Shot> shots = {
        workbenchShot(QStringLiteral("workbench.png"), QStringLiteral("workbench"), T::Light, {}),
        workbenchShot(QStringLiteral("dashboard.png"), QStringLiteral("dashboard"), T::Light,
                      {QStringLiteral("qat"), QStringLiteral("qad")}),
        workbenchShot(QStringLiteral("dashboard-dark.png"), QStringLiteral("dashboard"), T::Dark,
                      {QStringLiteral("qat"), QStringLiteral("qad")}),
        workbenchShot(QStringLiteral("compare.png"), QStringLiteral("compare"), T::Light, {}),
        inspectorShot(QStringLiteral("inspector-histogram.png"), QStringLiteral("histogram"), T::Light,
                      QStringLiteral("model.layers.0.mlp.down_proj")),
        inspectorShot(QStringLiteral("inspector-scales.png"), QStringLiteral("scales"), T::Light,
                      QStringLiteral("model.layers.0.mlp.down_proj")),
        inspectorShot(QStringLiteral("inspector-outliers.png"), QStringLiteral("outliers"), T::Light,
                      QStringLiteral("model.layers.0.mlp.down_proj")),
        inspectorShot(QStringLiteral("inspector-heatmap.png"), QStringLiteral("heatmap"), T::Light),
        inspectorShot(QStringLiteral("inspector-sensitivity.png"), QStringLiteral("sensitivity"), T::Light),
        importanceShot(QStringLiteral("inspector-importance.png"), T::Light, QStringLiteral("blk.1.ffn_down.weight")),
        inspectorShot(QStringLiteral("inspector-histogram-dark.png"), QStringLiteral("histogram"), T::Dark,
                      QStringLiteral("model.layers.1.self_attn.o_proj")),
        divergenceShot(QStringLiteral("inspector-depth.png"), QStringLiteral("depth"), T::Light),
        divergenceShot(QStringLiteral("inspector-tokens.png"), QStringLiteral("tokens"), T::Light),
        flightShot(QStringLiteral("dashboard-flight.png"), QStringLiteral("flips_since_last"), T::Light),
        flightShot(QStringLiteral("dashboard-flight-distance.png"), QStringLiteral("block_distance"), T::Light),
    };
    // Last: the Experiments view points at its own project.
    std::vector<Shot> experiments = {
        experimentsShot(QStringLiteral("experiments-frontier.png"), QStringLiteral("nvfp4-vs-mxfp4"), 2, 200,
                        QStringLiteral("Bits frontier"), QStringLiteral("recipe=NVFP4_DEFAULT"), T::Light),
        experimentsShot(QStringLiteral("experiments-differences.png"), QStringLiteral("nvfp4-vs-mxfp4"), 2, 200,
                        QStringLiteral("Differences"), QString(), T::Light),
    };
    std::vector<Shot> evaluation = {
        evaluationShot(QStringLiteral("evaluation-success.png"), QStringLiteral("Success"), T::Light),
        evaluationShot(QStringLiteral("evaluation-flips.png"), QStringLiteral("Flips"), T::Light),
        evaluationShot(QStringLiteral("evaluation-cost.png"), QStringLiteral("Cost"), T::Light),
        evaluationShot(QStringLiteral("evaluation-checklist-dark.png"), QStringLiteral("Checklist"), T::Dark),
    };
    // An outlier of 14.2 planted as element 10 of the sample, and selected.
    const auto outlierAt10 = [](FormatExplorerView& view) {
        std::vector<float> block = view.walkthrough()->block();
        block[10] = 14.2f;
        view.walkthrough()->setBlock(block);
        view.walkthrough()->selectElement(10);
    };
    std::vector<Shot> explorer = {
        // A tensor amax above the block's makes the E4M3 block scale a real rounding step.
        explorerShot(QStringLiteral("format-explorer-nvfp4.png"), QStringLiteral("nvfp4"), T::Light, SampleKind::RandomNormal, 7,
                     [](FormatExplorerView& view) { view.walkthrough()->setTensorAmax(12.0f); }),
        // An outlier of 14.2 under the OCP floor rule: X = 2^(3 − 2) = 2 and 14.2 / 2 = 7.1 clips to 6.
        explorerShot(QStringLiteral("format-explorer-mxfp4.png"), QStringLiteral("mxfp4"), T::Light, SampleKind::WithOutlier, 3,
                     outlierAt10),
        explorerShot(QStringLiteral("format-explorer-int4.png"), QStringLiteral("int4"), T::Light, SampleKind::RandomNormal, 11),
        explorerShot(QStringLiteral("format-explorer-fp8-e4m3.png"), QStringLiteral("fp8_e4m3"), T::Light, SampleKind::WithOutlier, 5),
        explorerShot(QStringLiteral("format-explorer-nf4.png"), QStringLiteral("nf4"), T::Light, SampleKind::RandomNormal, 13,
                     [](FormatExplorerView& view) {
                         if (auto* dq = view.walkthrough()->findChild<QCheckBox*>(QStringLiteral("doubleQuant")))
                             dq->setChecked(true);
                     }),
        explorerShot(QStringLiteral("format-explorer-gguf-q4_0.png"), QStringLiteral("gguf_q4_0"), T::Light, SampleKind::RandomNormal, 17),
        // A Q4_K super-block with an outlier: sub-block 2's search, the 6-bit scales and mins.
        explorerShot(QStringLiteral("format-explorer-gguf-q4_k.png"), QStringLiteral("gguf_q4_k"), T::Light, SampleKind::WithOutlier, 23,
                     [](FormatExplorerView& view) { view.walkthrough()->selectElement(70); }),
        // llama.cpp's i-quants: IQ2_XXS (uniform importance stands in for the imatrix it needs; the
        // 8-dimensional lattice levels) and IQ3_S (the base of IQ3_M; sub-block 3 selected).
        explorerShot(QStringLiteral("format-explorer-gguf-iq2_xxs.png"), QStringLiteral("gguf_iq2_xxs"), T::Light,
                     SampleKind::RandomNormal, 29, [](FormatExplorerView& view) { view.walkthrough()->selectElement(37); }),
        explorerShot(QStringLiteral("format-explorer-gguf-iq3_s.png"), QStringLiteral("gguf_iq3_s"), T::Light, SampleKind::WithOutlier,
                     31, [](FormatExplorerView& view) { view.walkthrough()->selectElement(100); }),
        explorerShot(QStringLiteral("format-explorer-nvfp4-dark.png"), QStringLiteral("nvfp4"), T::Dark, SampleKind::WithOutlier, 7),
        explorerShot(QStringLiteral("format-explorer-mxfp8-dark.png"), QStringLiteral("mxfp8_e4m3"), T::Dark, SampleKind::RandomNormal, 19),
        // The same block with E5M3 scales: no tensor amax enters, the block scale alone.
        explorerShot(QStringLiteral("format-explorer-nvfp4-e5m3.png"), QStringLiteral("nvfp4_e5m3"), T::Light, SampleKind::RandomNormal, 7),
        // One token with an outlier feature of 14.2: LLM.int8() keeps it, the row's absmax comes from the rest.
        explorerShot(QStringLiteral("format-explorer-llm-int8.png"), QStringLiteral("llm_int8"), T::Light, SampleKind::WithOutlier, 3,
                     outlierAt10),
    };
    shots.insert(shots.end(), explorer.begin(), explorer.end());
    shots.insert(shots.end(), experiments.begin(), experiments.end());
    shots.insert(shots.end(), evaluation.begin(), evaluation.end());
    return shots;
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::encoderShots(const QString& sentences, const QString& pairs) {
    using T = ThemeManager::Theme;
    // The recipe editor's data fields first: statistics and sensitivity calibrate on them.
    auto withData = [sentences, pairs](Shot shot) {
        auto setup = shot.setup;
        shot.setup = [setup, sentences, pairs](MainWindow& w) {
            w.workbench()->recipeEditor()->setCalibration(sentences);
            w.workbench()->recipeEditor()->setEvalPairs(pairs);
            setup(w);
        };
        // MiniLM's statistics and per-layer sensitivity are jobs of minutes on 2 shared cores.
        shot.timeoutMs = 900000;
        return shot;
    };
    // MiniLM's layers: the attention block's query reads the embedding LayerNorm's output (the
    // residual stream, where BERT's outlier dimensions live); output.dense reads the GELU output.
    const QString query = QStringLiteral("encoder.layer.0.attention.self.query");
    const QString ffnOut = QStringLiteral("encoder.layer.5.output.dense");
    return {
        withData(workbenchShot(QStringLiteral("tutorial-workbench.png"), QStringLiteral("workbench"), T::Light, {})),
        withData(workbenchShot(QStringLiteral("tutorial-compare.png"), QStringLiteral("compare"), T::Light, {QStringLiteral("ptq")})),
        withData(workbenchShot(QStringLiteral("tutorial-dashboard.png"), QStringLiteral("dashboard"), T::Light, {QStringLiteral("qad")})),
        withData(inspectorShot(QStringLiteral("tutorial-outliers.png"), QStringLiteral("outliers"), T::Light, query, QStringLiteral("int8"))),
        withData(inspectorShot(QStringLiteral("tutorial-histogram.png"), QStringLiteral("histogram"), T::Light, query, QStringLiteral("nvfp4"))),
        withData(inspectorShot(QStringLiteral("tutorial-histogram-mxfp4.png"), QStringLiteral("histogram"), T::Light, query, QStringLiteral("mxfp4"))),
        withData(inspectorShot(QStringLiteral("tutorial-ffn-outliers.png"), QStringLiteral("outliers"), T::Light, ffnOut, QStringLiteral("int8"))),
        withData(inspectorShot(QStringLiteral("tutorial-sensitivity.png"), QStringLiteral("sensitivity"), T::Light)),
        // scripts/tutorial-screenshots runs nvfp4-vs-mxfp4's encoder form (3 replicates) into
        // experiments.qlab beside the project: the frontier of embedding cosine against bits.
        experimentsShot(QStringLiteral("tutorial-experiments.png"), QStringLiteral("nvfp4-vs-mxfp4"), 3, 0,
                        QStringLiteral("Bits frontier"), QStringLiteral("recipe=NVFP4_DEFAULT"), T::Light, sentences, pairs),
    };
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::realModelShots(const QString& text, const QString& prompt) {
    using T = ThemeManager::Theme;
    auto withText = [text](Shot shot) {
        auto setup = shot.setup;
        shot.setup = [setup, text](MainWindow& w) {
            w.workbench()->recipeEditor()->setCalibration(text);
            setup(w);
        };
        shot.timeoutMs = 900000;  // statistics of a 135 M model: minutes on 2 shared cores
        return shot;
    };
    Shot generate{QStringLiteral("real-generate.png"),
                  [prompt](MainWindow& w) {
                      w.themeManager()->apply(T::Light);
                      w.showView(QStringLiteral("generate"));
                      GenerateView* v = w.generateView();
                      // Every completed PTQ / QAD run beside the FP model, as the view offers them.
                      for (const RunRow& r : w.workbench()->explorer()->runs())
                          if (r.status == QLatin1String("completed"))
                              v->checkCandidate(runModelFolder(r.kind, r.configJson));
                      v->setPrompt(prompt);
                      v->setChat(true);
                      v->setMaxTokens(40);
                      // A refusal (no model yet, not a decoder) would otherwise wait out the timeout.
                      if (!v->generate())
                          qWarning("real-generate.png: generation did not start: %s", qPrintable(v->statusText()));
                  },
                  [](MainWindow& w) { return !w.generateView()->isRunning() && !w.generateView()->report().outputs.empty(); },
                  900000};
    return {
        withText(workbenchShot(QStringLiteral("real-workbench.png"), QStringLiteral("workbench"), T::Light, {})),
        generate,
        withText(workbenchShot(QStringLiteral("real-compare.png"), QStringLiteral("compare"), T::Light, {QStringLiteral("ptq")})),
        withText(workbenchShot(QStringLiteral("real-dashboard.png"), QStringLiteral("dashboard"), T::Light, {QStringLiteral("qad")})),
        withText(inspectorShot(QStringLiteral("real-outliers.png"), QStringLiteral("outliers"), T::Light,
                               QStringLiteral("model.layers.3.mlp.down_proj"), QStringLiteral("int8"))),
        withText(inspectorShot(QStringLiteral("real-histogram.png"), QStringLiteral("histogram"), T::Light,
                               QStringLiteral("model.layers.3.mlp.down_proj"), QStringLiteral("nvfp4"))),
        // The inputs of the last down_proj: the features LLM.int8() would compute in FP16.
        withText(inspectorShot(QStringLiteral("real-llm-int8.png"), QStringLiteral("outliers"), T::Light,
                               QStringLiteral("model.layers.29.mlp.down_proj"), QStringLiteral("int8"), true)),
    };
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::doctorShots(const QString& stem) {
    return {Shot{stem + QStringLiteral(".png"), [](MainWindow& w) { w.showView(QStringLiteral("doctor")); },
                 [](MainWindow& w) { return !w.exportDoctor()->report().path.empty(); }}};
}

std::vector<ScreenshotRunner::Shot> ScreenshotRunner::formatShots(const QStringList& formats) {
    std::vector<Shot> shots;
    for (const QString& name : formats) {
        shots.push_back({QStringLiteral("format-explorer-%1.png").arg(name), [name](MainWindow& w) {
                             w.showView(QStringLiteral("format-explorer"));
                             if (!w.formatExplorer()->selectFormat(name))
                                 throw std::runtime_error("unknown format '" + name.toStdString() + "'");
                             w.formatExplorer()->walkthrough()->generate(SampleKind::RandomNormal, 1);
                         }});
    }
    return shots;
}

void ScreenshotRunner::start() {

    if (!QDir().mkpath(m_directory)) {
        std::fprintf(stderr, "quantlab: cannot create the screenshot folder '%s'\n", qPrintable(m_directory));
        QTimer::singleShot(0, this, [this] { Q_EMIT finished(1); });
        return;
    }
    QTimer::singleShot(kSettleMs * 2, this, &ScreenshotRunner::next);

}

void ScreenshotRunner::next() {
    if (m_index >= m_shots.size()) {
        Q_EMIT finished(m_failures == 0 ? 0 : 1);
        return;
    }
    const Shot& shot = m_shots[m_index];

    try {
        shot.setup(*m_window);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quantlab: screenshot %s: %s\n", qPrintable(shot.file), e.what());
        ++m_failures;
    }
    m_waitedMs = 0;
    capture();
}

void ScreenshotRunner::capture() {
    const Shot& shot = m_shots[m_index];
    if (shot.ready && !shot.ready(*m_window) && m_waitedMs < shot.timeoutMs) {
        m_waitedMs += 100;
        QTimer::singleShot(100, this, &ScreenshotRunner::capture);
        return;
    }
    if (shot.ready && m_waitedMs >= shot.timeoutMs)
        std::fprintf(stderr, "quantlab: screenshot %s: not ready after %d s (last error: %s)\n", qPrintable(shot.file),
                     shot.timeoutMs / 1000, qPrintable(m_window->workbench()->lastError()));
    QTimer::singleShot(kSettleMs, this, [this] {
        const Shot& s = m_shots[m_index];
        for (QCustomPlot* plot : m_window->findChildren<QCustomPlot*>()) plot->replot(QCustomPlot::rpImmediateRefresh);
        const QString path = QDir(m_directory).filePath(s.file);
        // The files are committed: 256 colours and zlib level 9 (PNG quality 0) keep them small.
        if (quantizeToPalette(m_window->grab().toImage()).save(path, "PNG", 0)) {
            m_written << path;
            std::printf("%s\n", qPrintable(path));
            std::fflush(stdout);
        } else {
            std::fprintf(stderr, "quantlab: could not write %s\n", qPrintable(path));
            ++m_failures;
        }
        ++m_index;
        next();
    });
}

}  // namespace ql
