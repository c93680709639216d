// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/experiment_result_panel.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/api/export_api.h"
#include "plots/interval_plot.h"

namespace ql {
namespace {

using nlohmann::json;

// Metrics where smaller is better: the frontier's front and the plots' wording follow them.
bool lowerIsBetter(const QString& metric) {
    return metric.startsWith(QLatin1String("kl")) || metric.startsWith(QLatin1String("loss")) ||
           metric == QLatin1String("contrastive_loss") || metric == QLatin1String("bits_per_parameter");
}

// Metrics that describe a run rather than score it: not offered as the plotted metric.
bool descriptive(const std::string& metric) {
    return metric == "bits_per_parameter" || metric == "planner_qat_fraction" || metric == "tokens_per_parameter_byte";
}

const experiments::MetricSummary* findMetric(const std::vector<experiments::MetricSummary>& metrics, const std::string& name) {
    for (const auto& m : metrics)
        if (m.metric == name) return &m;
    return nullptr;
}

IntervalPlot::Item item(const QString& label, double x, const experiments::MetricSummary& m) {
    IntervalPlot::Item it;
    it.label = label;
    it.x = x;
    it.value = m.value.mean;
    it.low = m.value.ci.low;
    it.high = m.value.ci.high;
    it.tooltip = QStringLiteral("n = %1, interval: %2").arg(m.value.n).arg(QString::fromStdString(m.interval));
    return it;
}

double parameterNumber(const experiments::Cell& cell, const std::string& axis, double fallback) {
    const auto it = cell.values.find(axis);
    if (it == cell.values.end()) return fallback;
    try {
        return std::stod(it->second);
    } catch (const std::exception&) {
        return fallback;
    }
}

}  // namespace

QString experimentCellLabel(const experiments::Cell& cell) {
    QStringList parts;
    for (const auto& [axis, value] : cell.values) {
        QString v = QString::fromStdString(value);
        if (v.size() >= 2 && v.startsWith(QLatin1Char('"')) && v.endsWith(QLatin1Char('"'))) v = v.mid(1, v.size() - 2);
        parts << v;
    }
    return parts.isEmpty() ? QStringLiteral("base") : parts.join(QStringLiteral(" · "));
}

ExperimentResultPanel::ExperimentResultPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Metric:"), this));
    m_metric = new QComboBox(this);
    m_metric->setObjectName(QStringLiteral("experimentMetric"));
    m_metric->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    row->addWidget(m_metric);
    row->addStretch(1);
    layout->addLayout(row);

    auto* split = new QSplitter(Qt::Vertical, this);
    layout->addWidget(split, 1);
    m_tabs = new QTabWidget(split);
    m_tabs->setObjectName(QStringLiteral("experimentPlots"));
    auto makePlot = [this](const QString& name, const QString& tab) {
        auto* plot = new IntervalPlot(m_tabs);
        plot->setObjectName(name);
        plot->setExportName(name);
        m_tabs->addTab(plot, tab);
        return plot;
    };
    m_cells = makePlot(QStringLiteral("experimentCellPlot"), tr("Cells"));
    m_differences = makePlot(QStringLiteral("experimentDifferencePlot"), tr("Differences"));
    m_fraction = makePlot(QStringLiteral("experimentFractionPlot"), tr("QAT fraction"));
    m_frontier = makePlot(QStringLiteral("experimentFrontierPlot"), tr("Bits frontier"));

    auto* details = new QWidget(split);
    auto* dl = new QVBoxLayout(details);
    dl->setContentsMargins(0, 4, 0, 0);
    auto* selRow = new QHBoxLayout;
    m_selection = new QLabel(tr("Click a point of the bits frontier to see its run and plan."), details);
    m_selection->setObjectName(QStringLiteral("experimentSelection"));
    m_selection->setWordWrap(true);
    selRow->addWidget(m_selection, 1);
    m_exportPlan = new QPushButton(tr("Export plan…"), details);
    m_exportPlan->setObjectName(QStringLiteral("experimentExportPlan"));
    m_exportPlan->setToolTip(tr("Write the selected run's plan as a QuantLab recipe (JSON, docs/RECIPES.md), as "
                                "compressed-tensors config_groups, as a Model Optimizer quant_cfg or as llama-quantize "
                                "--tensor-type arguments (docs/CLI.md \"recipe\")"));
    m_exportPlan->setEnabled(false);
    selRow->addWidget(m_exportPlan);
    dl->addLayout(selRow);
    m_recipe = new QPlainTextEdit(details);
    m_recipe->setObjectName(QStringLiteral("experimentRecipe"));
    m_recipe->setReadOnly(true);
    m_recipe->setPlaceholderText(tr("the selected run's recipe (its per-layer plan)"));
    m_recipe->setLineWrapMode(QPlainTextEdit::NoWrap);
    dl->addWidget(m_recipe, 1);
    m_manifestToggle = new QToolButton(details);
    m_manifestToggle->setObjectName(QStringLiteral("experimentManifestToggle"));
    m_manifestToggle->setText(tr("Reproducibility manifest"));
    m_manifestToggle->setCheckable(true);
    m_manifestToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_manifestToggle->setArrowType(Qt::RightArrow);
    m_manifestToggle->setAutoRaise(true);
    dl->addWidget(m_manifestToggle);
    m_manifest = new QPlainTextEdit(details);
    m_manifest->setObjectName(QStringLiteral("experimentManifest"));
    m_manifest->setReadOnly(true);
    m_manifest->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_manifest->setVisible(false);
    dl->addWidget(m_manifest, 1);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);

    connect(m_manifestToggle, &QToolButton::toggled, this, [this](bool on) {
        m_manifest->setVisible(on);
        m_recipe->setVisible(!on);
        m_manifestToggle->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
    connect(m_metric, &QComboBox::currentIndexChanged, this, [this] { updatePlots(); });
    connect(m_frontier, &IntervalPlot::pointClicked, this, [this](int i) {
        if (i >= 0 && i < m_frontierCells.size()) selectCell(m_frontierCells[i]);
    });
    connect(m_exportPlan, &QPushButton::clicked, this, &ExperimentResultPanel::exportPlanInteractively);
    updatePlots();
}

void ExperimentResultPanel::setSnapshot(const ExperimentSnapshot& snapshot) {
    m_snapshot = snapshot;
    rebuildMetrics();
    const QString analysis = snapshot.report ? QString::fromStdString(snapshot.report->spec.analysis) : QString();
    if (analysis != m_lastAnalysis) {
        m_lastAnalysis = analysis;
        // The plot the experiment was made for comes first.
        if (analysis == QLatin1String("frontier")) m_tabs->setCurrentWidget(m_frontier);
        else if (analysis == QLatin1String("qat_fraction")) m_tabs->setCurrentWidget(m_fraction);
        else if (snapshot.report && !snapshot.report->result.comparisons.empty()) m_tabs->setCurrentWidget(m_differences);
        else m_tabs->setCurrentWidget(m_cells);
    }
    updatePlots();
    updateManifest();
    if (!m_selectedCell.isEmpty()) selectCell(m_selectedCell);  // its run may have finished since
}

void ExperimentResultPanel::rebuildMetrics() {
    const QString current = m_metric->currentData().toString();
    QStringList metrics;
    if (m_snapshot.report) {
        std::set<std::string> reported;
        for (const auto& c : m_snapshot.report->result.cells)
            for (const auto& m : c.metrics) reported.insert(m.metric);
        for (const std::string& m : m_snapshot.report->spec.metrics)
            if (reported.count(m) && !descriptive(m)) metrics << QString::fromStdString(m);
        for (const std::string& m : reported)  // reported beyond the spec's list (per-domain rates)
            if (!descriptive(m) && !metrics.contains(QString::fromStdString(m))) metrics << QString::fromStdString(m);
    }
    QStringList shown;
    for (int i = 0; i < m_metric->count(); ++i) shown << m_metric->itemData(i).toString();
    if (shown == metrics) return;
    const QSignalBlocker block(m_metric);
    m_metric->clear();
    for (const QString& m : metrics) m_metric->addItem(m, m);
    const int keep = m_metric->findData(current);
    m_metric->setCurrentIndex(keep >= 0 ? keep : 0);
}

bool ExperimentResultPanel::setMetric(const QString& metric) {
    const int i = m_metric->findData(metric);
    if (i < 0) return false;
    m_metric->setCurrentIndex(i);
    updatePlots();
    return true;
}

QString ExperimentResultPanel::metric() const { return m_metric->currentData().toString(); }

void ExperimentResultPanel::updatePlots() {
    m_cellKeys.clear();
    m_frontierCells.clear();
    const QString metricName = metric();
    const std::string metric = metricName.toStdString();
    const QString yLabel = metricName + (lowerIsBetter(metricName) ? tr(" (lower is better)") : QString());
    for (IntervalPlot* p : {m_cells, m_differences, m_fraction, m_frontier}) p->setAxisLabels(QString(), yLabel);
    if (!m_snapshot.report || m_snapshot.report->result.cells.empty() || metric.empty()) {
        const QString why = tr("no finished runs yet: start the experiment");
        for (IntervalPlot* p : {m_cells, m_differences, m_fraction, m_frontier}) p->clear(why);
        return;
    }
    const experiments::ExperimentResult& result = m_snapshot.report->result;

    // Cells: mean and 95 % interval per cell.
    QVector<IntervalPlot::Item> cells;
    for (const auto& c : result.cells)
        if (const auto* m = findMetric(c.metrics, metric)) {
            cells.push_back(item(experimentCellLabel(*c.cell), 0, *m));
            m_cellKeys << QString::fromStdString(c.cell->key);
        }
    m_cells->setTitle(tr("%1 per cell: mean, 95 % interval").arg(metricName));
    if (cells.isEmpty()) m_cells->clear(tr("no cell reports %1").arg(metricName));
    else m_cells->setBars(cells);

    // Differences: each comparison's paired difference with its interval.
    QVector<IntervalPlot::Item> diffs;
    std::map<std::string, int> perName;
    for (const auto& c : result.comparisons) ++perName[c.comparison->name];
    for (const auto& c : result.comparisons)
        if (const auto* m = findMetric(c.metrics, metric)) {
            QString label = QString::fromStdString(c.comparison->name);
            if (perName[c.comparison->name] > 1) {
                // Several cells pairs of one comparison: name them by the axes the pair shares.
                QStringList shared;
                for (const auto& cell : m_snapshot.report->spec.cells)
                    if (cell.key == c.a)
                        for (const auto& [axis, value] : cell.values)
                            if (!c.comparison->a.count(axis)) shared << QString::fromStdString(value);
                if (!shared.isEmpty()) label += QStringLiteral(" @ ") + shared.join(QStringLiteral(" · "));
            }
            diffs.push_back(item(label, 0, *m));
        }
    m_differences->setTitle(tr("%1: paired difference a − b, 95 % interval").arg(metricName));
    if (diffs.isEmpty()) m_differences->clear(tr("this experiment names no comparisons"));
    else m_differences->setBars(diffs);

    // QAT fraction: one curve per token budget over the QAT fraction, the planner's f̂ as a line.
    std::map<double, IntervalPlot::Curve> curves;
    std::map<double, double> predicted;
    for (const auto& c : result.cells) {
        if (c.cell->parameters.method != "fp-then-qat") continue;
        const auto* m = findMetric(c.metrics, metric);
        if (!m) continue;
        const double budget = static_cast<double>(c.cell->parameters.total_steps);
        IntervalPlot::Curve& curve = curves[budget];
        curve.name = tr("%1 steps").arg(budget);
        curve.points.push_back(item(experimentCellLabel(*c.cell), parameterNumber(*c.cell, "qat_fraction", c.cell->parameters.qat_fraction), *m));
        if (const auto* f = findMetric(c.metrics, "planner_qat_fraction")) predicted[budget] = f->value.mean;
    }
    QVector<IntervalPlot::Curve> curveList;
    QVector<IntervalPlot::Marker> markers;
    for (auto& [budget, curve] : curves) {
        std::sort(curve.points.begin(), curve.points.end(), [](const auto& a, const auto& b) { return a.x < b.x; });
        const int index = static_cast<int>(curveList.size());
        curveList.push_back(curve);
        if (predicted.count(budget))
            markers.push_back({tr("planner f̂ = %1").arg(predicted[budget], 0, 'f', 3), predicted[budget], index});
        // The measured optimum of this budget: the quadratic fit of its mean loss (engine analysis).
        for (const auto& o : result.qat_fraction_optima)
            if (o.fitted && static_cast<double>(o.total_steps) == budget)
                markers.push_back({tr("measured f* = %1 (loss fit)").arg(o.optimum_fraction, 0, 'f', 3), o.optimum_fraction, index, true});
    }
    m_fraction->setTitle(tr("%1 against the QAT fraction; dashed: the planner's f̂, solid: the measured optimum").arg(metricName));
    m_fraction->setAxisLabels(tr("QAT fraction of the step budget"), yLabel);
    if (curveList.isEmpty()) m_fraction->clear(tr("no fp-then-qat cells (the qat-fraction template)"));
    else m_fraction->setCurves(curveList, markers);

    // Frontier: the metric against effective bits per parameter (block and global scales counted).
    // Uniform recipes and the mixed plans of each menu are different kinds of point: their own
    // marks and legend entries (the uniform recipes first, then the menus as they come).
    std::vector<std::pair<IntervalPlot::Item, QString>> frontier;
    QStringList groups;
    const auto plotted = [&](const experiments::CellSummary& c) {
        return findMetric(c.metrics, "bits_per_parameter") && findMetric(c.metrics, metric);
    };
    for (const auto& c : result.cells)
        if (plotted(c) && c.cell->parameters.method != "mixed") {
            groups << tr("uniform recipes");
            break;
        }
    for (const auto& c : result.cells) {
        if (!plotted(c)) continue;
        const auto* bits = findMetric(c.metrics, "bits_per_parameter");
        const auto* m = findMetric(c.metrics, metric);
        IntervalPlot::Item point = item(experimentCellLabel(*c.cell), bits->value.mean, *m);
        if (c.cell->parameters.method == "mixed") {
            QStringList menu;
            for (const std::string& entry : c.cell->parameters.menu) menu << QString::fromStdString(entry);
            const QString group = tr("mixed: %1").arg(menu.join(QLatin1Char('+')));
            if (!groups.contains(group)) groups << group;
            point.group = static_cast<int>(groups.indexOf(group));
            // The mark and the legend say the menu; the label says the search's budget.
            point.tooltip = tr("%1, plan for at most %2 bits per parameter; %3")
                                .arg(group, QString::number(c.cell->parameters.bits, 'g', 4), point.tooltip);
            point.label = tr("≤ %1 bits").arg(c.cell->parameters.bits, 0, 'g', 4);
            // Each replicate's search makes its own plan: the bits it came to have an interval.
            if (bits->value.n > 1 && bits->value.ci.high > bits->value.ci.low) {
                point.xLow = bits->value.ci.low;
                point.xHigh = bits->value.ci.high;
                point.tooltip += tr("; %1 to %2 bits per parameter across replicates (95 %)")
                                     .arg(bits->value.ci.low, 0, 'f', 2)
                                     .arg(bits->value.ci.high, 0, 'f', 2);
            }
        }
        frontier.emplace_back(point, QString::fromStdString(c.cell->key));
    }
    // In x order, as the plot keeps them: point i stands for m_frontierCells[i].
    std::stable_sort(frontier.begin(), frontier.end(), [](const auto& a, const auto& b) { return a.first.x < b.first.x; });
    QVector<IntervalPlot::Item> points;
    for (const auto& [point, key] : frontier) {
        points.push_back(point);
        m_frontierCells << key;
    }
    m_frontier->setTitle(tr("%1 against bits per parameter").arg(metricName));
    m_frontier->setToolTip(tr("Click a point: its run and plan below"));
    m_frontier->setAxisLabels(tr("effective bits per parameter (with block and global scales)"), yLabel);
    if (points.isEmpty()) m_frontier->clear(tr("no cell reports bits per parameter (PTQ runs do)"));
    else {
        // KL spans decades between 4-bit and 8-bit points: a log axis keeps the small ones apart.
        m_frontier->setLogScale(metric == "kl");
        m_frontier->setPoints(points, !lowerIsBetter(metricName), groups.size() > 1 ? groups : QStringList());
        m_frontier->setSelectedPoint(static_cast<int>(m_frontierCells.indexOf(m_selectedCell)));
    }
}

void ExperimentResultPanel::selectCell(const QString& cell) {
    m_selectedCell = cell;
    m_selectedRun = 0;
    m_selectedRecipe.clear();
    int replicate = -1;
    for (const auto& [key, state] : m_snapshot.runs) {
        if (QString::fromStdString(key.first) != cell || state.kind != ExperimentRunState::Kind::Done) continue;
        if (replicate >= 0 && key.second > replicate) continue;
        replicate = static_cast<int>(key.second);
        m_selectedRun = state.run_id;
        m_selectedRecipe = QString::fromStdString(state.recipe_json);
    }
    m_frontier->setSelectedPoint(static_cast<int>(m_frontierCells.indexOf(cell)));
    if (replicate < 0) {
        m_selection->setText(tr("Cell %1 has no finished run yet.").arg(cell));
        m_recipe->clear();
        m_exportPlan->setEnabled(false);
        return;
    }
    m_selection->setText(tr("<b>%1</b>, replicate %2: run %3 of the project").arg(cell.toHtmlEscaped()).arg(replicate).arg(m_selectedRun));
    QString pretty = m_selectedRecipe;
    try {
        pretty = QString::fromStdString(json::parse(m_selectedRecipe.toStdString()).dump(2));
    } catch (const std::exception&) {
    }
    m_recipe->setPlainText(pretty);
    m_exportPlan->setEnabled(!m_selectedRecipe.isEmpty());
    emit runSelected(cell, replicate, m_selectedRun);
}

QString ExperimentResultPanel::exportPlan(const QString& path, const QString& as) const {
    if (m_selectedRecipe.isEmpty()) return tr("no run with a plan is selected");
    // The recipe exactly as the run recorded it: the plan survives the export unchanged.
    QByteArray bytes = m_selectedRecipe.toUtf8();
    if (as != QLatin1String("quantlab")) {
        std::string model;
        if (m_snapshot.report)
            for (const auto& c : m_snapshot.report->spec.cells)
                if (QString::fromStdString(c.key) == m_selectedCell) model = c.parameters.model;
        if (model.empty()) return tr("the selected cell names no model");
        try {
            // The same writer as the compressed-tensors export (the model's layers, no calibration).
            bytes = QByteArray::fromStdString(export_plan(model, m_selectedRecipe.toStdString(), as.toStdString()).text);
        } catch (const std::exception& e) {
            return QString::fromUtf8(e.what());
        }
    }
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return tr("cannot write '%1': %2").arg(path, f.errorString());
    if (f.write(bytes) != bytes.size() || !f.flush()) return tr("writing '%1' failed: %2").arg(path, f.errorString());
    return {};
}

QList<QPair<QString, QString>> planExportChoices() {
    // The QuantLab recipe itself, then every form the engine writes (export_api.h plan_export_kinds).
    QList<QPair<QString, QString>> choices{{QStringLiteral("quantlab"), QObject::tr("QuantLab recipe (*.json)")}};
    for (const std::string& kind : plan_export_kinds()) {
        const QString k = QString::fromStdString(kind);
        const QString filter = k == QLatin1String("compressed-tensors") ? QObject::tr("compressed-tensors quantization_config (*.json)")
                               : k == QLatin1String("modelopt")         ? QObject::tr("Model Optimizer quant_cfg (*.json)")
                               : k == QLatin1String("llama-tensor-types")
                                   ? QObject::tr("llama-quantize --tensor-type arguments (*.args)")
                                   : QObject::tr("%1 (*)").arg(k);
        choices.append({k, filter});
    }
    return choices;
}

void ExperimentResultPanel::exportPlanInteractively() {
    const QList<QPair<QString, QString>> choices = planExportChoices();
    QStringList filters;
    for (const auto& c : choices) filters << c.second;
    QString filter = filters.first();
    const QString stem = QString(m_selectedCell).replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plan"), QStringLiteral("%1-plan.json").arg(stem),
                                                      filters.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty()) return;
    QString as = QStringLiteral("quantlab");
    for (const auto& c : choices)
        if (c.second == filter) as = c.first;
    const QString error = exportPlan(path, as);
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export plan"), error);
}

void ExperimentResultPanel::updateManifest() {
    if (!m_snapshot.report) {
        m_manifest->setPlainText(tr("No invocation of this experiment is recorded in the project yet."));
        return;
    }
    const json report = projects::experiment_report_json(*m_snapshot.report);
    const json& manifest = report["manifest"];
    QStringList lines;
    lines << tr("experiment %1, identity %2").arg(QString::fromStdString(report["experiment"].get<std::string>()),
                                                   QString::fromStdString(report["identity_sha256"].get<std::string>()));
    const json& invocations = manifest["invocations"];
    lines << tr("%1 invocation(s); the last:").arg(invocations.size());
    if (!invocations.empty())
        for (const auto& [key, value] : invocations.back().items())
            lines << QStringLiteral("  %1: %2").arg(QString::fromStdString(key),
                                                    QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump()));
    lines << tr("runs (cell, replicate, seed, run, recipe / data / model SHA-256):");
    for (const json& r : manifest["runs"]) {
        auto field = [&r](const char* k) { return r.contains(k) && r[k].is_string() ? QString::fromStdString(r[k].get<std::string>()) : QString(); };
        lines << QStringLiteral("  %1 #%2 seed %3 run %4  recipe %5  data %6 %7  model %8")
                     .arg(field("cell"))
                     .arg(r.value("replicate", int64_t{0}))
                     .arg(r.value("seed", int64_t{0}))
                     .arg(r.value("run_id", int64_t{0}))
                     .arg(field("recipe_sha256").left(12), field("data"), field("data_sha256").left(12), field("model_sha256").left(12));
    }
    m_manifest->setPlainText(lines.join(QLatin1Char('\n')));
}

QString ExperimentResultPanel::manifestText() const { return m_manifest->toPlainText(); }
bool ExperimentResultPanel::manifestShown() const { return m_manifest->isVisible(); }

}  // namespace ql
