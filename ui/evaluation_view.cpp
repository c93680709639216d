// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/evaluation_view.h"

#include <QCheckBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

#include "engine/core/errors.h"
#include "plots/bar_chart.h"
#include "projects/evalsuite_records.h"
#include "ui/job_runner.h"
#include "ui/wrapping_label.h"

namespace ql {
namespace {

using namespace ql::evaluation;

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString percentText(double v) { return std::isfinite(v) ? QString::number(100.0 * v, 'f', 1) + QStringLiteral(" %") : QStringLiteral("–"); }

QString rateText(const RateInterval& r) {
    if (r.trials == 0) return QStringLiteral("–");
    return QStringLiteral("%1 [%2, %3] (%4/%5)")
        .arg(QString::number(100.0 * r.rate, 'f', 1), QString::number(100.0 * r.ci.low, 'f', 1), QString::number(100.0 * r.ci.high, 'f', 1))
        .arg(r.successes)
        .arg(r.trials);
}

QString numberText(double v, int precision = 4) {
    return std::isfinite(v) ? QString::number(v, 'g', precision) : QStringLiteral("–");
}
QString numberText(const std::optional<double>& v, int precision = 4) { return v ? numberText(*v, precision) : QStringLiteral("–"); }

QString oneLine(const std::string& s, int max) {
    QString t = qs(s);
    t.replace(QLatin1Char('\n'), QStringLiteral(" ↵ "));
    if (t.size() > max) t = t.left(max) + QStringLiteral("…");
    return t;
}

QString mib(double bytes) { return QString::number(bytes / 1048576.0, 'f', 1) + QStringLiteral(" MiB"); }

QTableWidget* makeTable(QWidget* parent, const QString& name) {
    auto* t = new QTableWidget(parent);
    t->setObjectName(name);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setAlternatingRowColors(true);
    t->verticalHeader()->setVisible(false);
    t->horizontalHeader()->setStretchLastSection(true);
    t->setWordWrap(false);
    return t;
}

void fillTable(QTableWidget* t, const QStringList& header, const QList<QStringList>& rows, const QList<QStringList>& tips = {}) {
    t->clear();
    t->setColumnCount(static_cast<int>(header.size()));
    t->setRowCount(static_cast<int>(rows.size()));
    t->setHorizontalHeaderLabels(header);
    for (int r = 0; r < rows.size(); ++r)
        for (int c = 0; c < rows[r].size() && c < header.size(); ++c) {
            auto* item = new QTableWidgetItem(rows[r][c]);
            if (r < tips.size() && c < tips[r].size() && !tips[r][c].isEmpty()) item->setToolTip(tips[r][c]);
            t->setItem(r, c, item);
        }
    t->resizeColumnsToContents();
    for (int c = 0; c + 1 < t->columnCount(); ++c) t->setColumnWidth(c, std::min(t->columnWidth(c), 360));
}

QList<QStringList> rowsOf(const QTableWidget* t) {
    QList<QStringList> rows;
    for (int r = 0; r < t->rowCount(); ++r) {
        QStringList row;
        for (int c = 0; c < t->columnCount(); ++c) row << (t->item(r, c) ? t->item(r, c)->text() : QString());
        rows << row;
    }
    return rows;
}

}  // namespace

EvaluationView::EvaluationView(QWidget* parent) : QWidget(parent), m_runner(new JobRunner(this)) {
    auto* layout = new QVBoxLayout(this);
    m_intro = new WrappingLabel(this);
    m_intro->setText(tr("Judge the open model and quantized runs of it by their answers: each answers an eval suite through "
                        "its own chat template, and every answer is checked by program. The open model is the baseline: flips "
                        "are the items a quantized model answers differently. Runs are stored in the project."));
    layout->addWidget(m_intro);

    auto* top = new QSplitter(Qt::Horizontal, this);
    top->setChildrenCollapsible(false);
    auto* newBox = new QGroupBox(tr("New evaluation"), top);
    auto* newLayout = new QVBoxLayout(newBox);
    m_reference = new QLabel(tr("Baseline of a new evaluation: no model open."), newBox);
    m_reference->setObjectName(QStringLiteral("evaluationReference"));
    m_reference->setWordWrap(true);
    newLayout->addWidget(m_reference);
    auto* form = new QFormLayout;
    auto* suiteRow = new QHBoxLayout;
    m_suite = new QLineEdit(QStringLiteral("default"), newBox);
    m_suite->setObjectName(QStringLiteral("evaluationSuite"));
    m_suite->setToolTip(tr("'default' (resources/evalsuites/default.jsonl) or a suite file (docs/EVAL_SUITES.md)"));
    auto* browseSuite = new QPushButton(tr("Browse…"), newBox);
    suiteRow->addWidget(m_suite, 1);
    suiteRow->addWidget(browseSuite);
    form->addRow(tr("Suite"), suiteRow);
    m_suiteSummary = new QLabel(newBox);
    m_suiteSummary->setObjectName(QStringLiteral("evaluationSuiteSummary"));
    m_suiteSummary->setWordWrap(true);
    form->addRow(QString(), m_suiteSummary);
    auto* options = new QHBoxLayout;
    m_maxTokens = new QSpinBox(newBox);
    m_maxTokens->setRange(1, 4096);
    m_maxTokens->setValue(256);
    m_maxTokens->setToolTip(tr("Generated tokens per item unless the item says"));
    m_limit = new QSpinBox(newBox);
    m_limit->setRange(0, 100000);
    m_limit->setSpecialValueText(tr("all"));
    m_limit->setToolTip(tr("Run only the first N items of the suite (0: all)"));
    m_samples = new QSpinBox(newBox);
    m_samples->setRange(1, 64);
    m_samples->setToolTip(tr("1: greedy. More: seeded samples at temperature 0.7, each a replicate"));
    options->addWidget(new QLabel(tr("Max tokens"), newBox));
    options->addWidget(m_maxTokens);
    options->addWidget(new QLabel(tr("Items"), newBox));
    options->addWidget(m_limit);
    options->addWidget(new QLabel(tr("Samples"), newBox));
    options->addWidget(m_samples);
    options->addStretch(1);
    form->addRow(tr("Decoding"), options);
    auto* textRow = new QHBoxLayout;
    m_text = new QLineEdit(newBox);
    m_text->setObjectName(QStringLiteral("evaluationText"));
    m_text->setPlaceholderText(tr("optional: real text for Δppl, KL and top-1 agreement"));
    auto* browseText = new QPushButton(tr("Browse…"), newBox);
    textRow->addWidget(m_text, 1);
    textRow->addWidget(browseText);
    form->addRow(tr("Text"), textRow);
    newLayout->addLayout(form);
    m_models = new QListWidget(newBox);
    m_models->setObjectName(QStringLiteral("evaluationModels"));
    m_models->setToolTip(tr("Quantized runs of the project to evaluate beside the baseline"));
    m_models->setMaximumHeight(110);
    newLayout->addWidget(m_models);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    m_run = new QPushButton(tr("Evaluate"), newBox);
    m_run->setObjectName(QStringLiteral("evaluationRun"));
    m_stop = new QPushButton(tr("Stop"), newBox);
    m_stop->setObjectName(QStringLiteral("evaluationStop"));
    buttons->addWidget(m_run);
    buttons->addWidget(m_stop);
    newLayout->addLayout(buttons);
    top->addWidget(newBox);

    auto* storedBox = new QGroupBox(tr("Stored runs"), top);
    auto* storedLayout = new QVBoxLayout(storedBox);
    m_stored = new QListWidget(storedBox);
    m_stored->setObjectName(QStringLiteral("evaluationStored"));
    m_stored->setToolTip(tr("The project's evaluation runs: tick two or more (the first ticked is the baseline) and compare"));
    storedLayout->addWidget(m_stored, 1);
    auto* storedButtons = new QHBoxLayout;
    m_allowMixed = new QCheckBox(tr("Allow mixed settings"), storedBox);
    m_allowMixed->setToolTip(tr("Put runs made with other decoding, suite or chat template side by side anyway"));
    m_compare = new QPushButton(tr("Compare"), storedBox);
    m_compare->setObjectName(QStringLiteral("evaluationCompare"));
    m_export = new QPushButton(tr("Export CSV…"), storedBox);
    m_export->setObjectName(QStringLiteral("evaluationExport"));
    m_export->setToolTip(tr("Every table of the shown evaluation as CSV files in a folder"));
    storedButtons->addWidget(m_allowMixed);
    storedButtons->addStretch(1);
    storedButtons->addWidget(m_compare);
    storedButtons->addWidget(m_export);
    storedLayout->addLayout(storedButtons);
    top->addWidget(storedBox);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    layout->addWidget(top);

    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("evaluationStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("evaluationTabs"));
    auto* success = new QWidget(m_tabs);
    auto* successLayout = new QVBoxLayout(success);
    successLayout->setContentsMargins(0, 0, 0, 0);
    auto* successSplit = new QSplitter(Qt::Vertical, success);
    m_chart = new BarChart(successSplit);
    m_chart->setObjectName(QStringLiteral("evaluationChart"));
    m_chart->setValueLabel(tr("success (%)"));
    m_chart->setExportName(QStringLiteral("evaluation-success"));
    m_chart->setHighlightLabel(tr("★ best; whiskers: 95 % Wilson interval"));
    m_rates = makeTable(successSplit, QStringLiteral("evaluationRates"));
    successSplit->addWidget(m_chart);
    successSplit->addWidget(m_rates);
    successSplit->setStretchFactor(0, 3);
    successSplit->setStretchFactor(1, 2);
    successLayout->addWidget(successSplit);
    m_tabs->addTab(success, tr("Success"));
    m_flips = makeTable(m_tabs, QStringLiteral("evaluationFlips"));
    m_flips->setToolTip(tr("Double-click a flip to open the Generate view at its prompt"));
    m_tabs->addTab(m_flips, tr("Flips"));
    auto* logits = new QWidget(m_tabs);
    auto* logitsLayout = new QVBoxLayout(logits);
    logitsLayout->setContentsMargins(0, 0, 0, 0);
    m_logits = makeTable(logits, QStringLiteral("evaluationLogits"));
    m_predictors = new QLabel(logits);
    m_predictors->setObjectName(QStringLiteral("evaluationPredictors"));
    m_predictors->setWordWrap(true);
    logitsLayout->addWidget(m_logits, 1);
    logitsLayout->addWidget(m_predictors);
    m_tabs->addTab(logits, tr("Logits"));
    m_cost = makeTable(m_tabs, QStringLiteral("evaluationCost"));
    m_tabs->addTab(m_cost, tr("Cost"));
    m_runs = makeTable(m_tabs, QStringLiteral("evaluationRuns"));
    m_tabs->addTab(m_runs, tr("Runs"));
    m_checklist = new QTreeWidget(m_tabs);
    m_checklist->setObjectName(QStringLiteral("evaluationChecklist"));
    m_checklist->setHeaderLabels({tr("Checklist"), tr("What was measured")});
    m_checklist->setRootIsDecorated(false);
    m_checklist->setWordWrap(true);
    m_tabs->addTab(m_checklist, tr("Checklist"));
    layout->addWidget(m_tabs, 1);

    connect(browseSuite, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Eval suite"), QString(), tr("Eval suites (*.jsonl);;All files (*)"));
        if (!f.isEmpty()) setSuite(f);
    });
    connect(browseText, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Real text"), QString(), tr("Text (*.txt);;All files (*)"));
        if (!f.isEmpty()) m_text->setText(f);
    });
    connect(m_suite, &QLineEdit::editingFinished, this, &EvaluationView::updateSuiteSummary);
    connect(m_run, &QPushButton::clicked, this, [this] { run(); });
    connect(m_stop, &QPushButton::clicked, m_runner, &JobRunner::cancel);
    connect(m_compare, &QPushButton::clicked, this, [this] { compareStored(); });
    connect(m_export, &QPushButton::clicked, this, [this] {
        const QString folder = QFileDialog::getExistingDirectory(this, tr("Export the evaluation's tables as CSV"));
        if (!folder.isEmpty()) exportCsv(folder);
    });
    connect(m_flips, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { openFlip(row); });
    connect(m_runner, &JobRunner::progressChanged, this, [this] {
        const ProgressEstimate& p = m_runner->progress();
        if (!m_runner->isRunning() || p.total() <= 0) return;
        QString text = p.phase() == "evalsuite" ? tr("Evaluating… %1 of %2 answers").arg(p.done()).arg(p.total())
                                                 : tr("Logit metrics on the text… %1 of %2").arg(p.done()).arg(p.total());
        if (const auto eta = p.eta_s()) text += tr(" · about %1 left in this phase").arg(qs(format_duration(*eta)));
        setStatus(text);
    });
    connect(m_runner, &JobRunner::finished, this, [this](JobRunner::Outcome outcome, const QString& message) {
        if (outcome == JobRunner::Outcome::Failed) setStatus(tr("Evaluation failed: %1").arg(message));
        else if (outcome == JobRunner::Outcome::Cancelled) setStatus(tr("Evaluation stopped (between items); nothing was stored."));
        updateButtons();
        emit finished();
    });
    updateSuiteSummary();
    showResult();
    updateButtons();
}

EvaluationView::~EvaluationView() = default;

void EvaluationView::setStatus(const QString& text) { m_status->setText(text); }
QString EvaluationView::statusText() const { return m_status->text(); }
bool EvaluationView::isRunning() const { return m_runner->isRunning(); }
bool EvaluationView::waitForFinished(int timeoutMs) { return m_runner->waitForFinished(timeoutMs); }
void EvaluationView::setMaxTokens(int tokens) { m_maxTokens->setValue(tokens); }
void EvaluationView::setItemLimit(int items) { m_limit->setValue(items); }
void EvaluationView::setTextFile(const QString& path) { m_text->setText(path); }
void EvaluationView::setAllowMixedSettings(bool allow) { m_allowMixed->setChecked(allow); }
int EvaluationView::storedRunCount() const { return m_stored->count() == 1 && !(m_stored->item(0)->flags() & Qt::ItemIsUserCheckable) ? 0 : m_stored->count(); }

void EvaluationView::setSuite(const QString& suite) {
    m_suite->setText(suite);
    updateSuiteSummary();
}

void EvaluationView::updateSuiteSummary() {
    try {
        const SuiteOverview o = describe_suite(m_suite->text().trimmed().toStdString());
        QStringList categories;
        for (const auto& [name, n] : o.categories) categories << QStringLiteral("%1 %2").arg(qs(name)).arg(n);
        m_suiteSummary->setText(tr("%1 items: %2").arg(o.items).arg(categories.join(QStringLiteral(", "))));
        m_suiteSummary->setToolTip(tr("%1\nsha256 %2").arg(qs(o.path), qs(o.sha256)));
    } catch (const std::exception& e) {
        m_suiteSummary->setText(tr("Cannot read the suite: %1").arg(QString::fromUtf8(e.what())));
    }
}

void EvaluationView::setProject(const QString& path) {
    m_project = path;
    refreshStoredRuns();
}

void EvaluationView::setReferenceModel(const QString& path, bool generates) {
    m_referencePath = path;
    m_generates = generates;
    m_reference->setText(generates ? tr("Baseline of a new evaluation (the open model): %1").arg(path)
                                   : tr("%1 does not generate text: open a decoder with a tokenizer to evaluate it.").arg(path));
    updateButtons();
}

void EvaluationView::setCandidates(const QList<Candidate>& candidates) {
    fillRunChecklist(m_models, candidates, tr("(no quantized runs yet: run PTQ, QAT or QAD, then evaluate them here)"));
}

bool EvaluationView::checkCandidate(const QString& path, bool checked) { return checkRun(m_models, path, checked); }

void EvaluationView::updateButtons() {
    const bool running = m_runner->isRunning();
    m_run->setEnabled(!running && m_generates && !m_referencePath.isEmpty());
    m_stop->setEnabled(running);
    m_compare->setEnabled(!running && storedRunCount() > 0);
    m_export->setEnabled(hasResult());
}

bool EvaluationView::run() {
    if (m_runner->isRunning() || !m_generates || m_referencePath.isEmpty()) return false;
    EvalSuiteRequest req;
    req.models = {m_referencePath.toStdString()};
    for (int i = 0; i < m_models->count(); ++i)
        if (m_models->item(i)->checkState() == Qt::Checked) {
            req.models.push_back(m_models->item(i)->data(Qt::UserRole).toString().toStdString());
            while (req.labels.size() + 1 < req.models.size()) req.labels.push_back("");
            req.labels.push_back(m_models->item(i)->text().toStdString());
        }
    req.suite = m_suite->text().trimmed().toStdString();
    req.max_tokens = m_maxTokens->value();
    req.limit = m_limit->value();
    req.samples = m_samples->value();
    if (req.samples > 1) req.temperature = 0.7;
    req.text = m_text->text().trimmed().toStdString();
    req.allow_mixed_settings = m_allowMixed->isChecked();
    const std::string project = m_project.toStdString();
    auto result = std::make_shared<EvalSuiteResult>();
    setStatus(tr("Evaluating %n model(s)…", nullptr, static_cast<int>(req.models.size())));
    const bool started = m_runner->start(
        tr("Evaluate"),
        [req, result, project](JobSink& sink, const CancellationToken& cancel) {
            *result = run_evalsuite(req, sink, cancel);
            if (project.empty()) return;
            // One project run per model (projects/evalsuite_records.h), as quantlab-cli --project records them.
            for (size_t i = 0; i < result->runs.size(); ++i) {
                if (result->loaded[i]) continue;
                const RunManifest& m = result->runs[i].manifest;
                projects::EvalsuiteRunRecord record;
                record.label = m.label;
                record.model_name = m.model;
                record.model_path = m.model_path;
                if (!m.recipe_json.empty()) {
                    record.recipe_name = m.quant_scheme;
                    record.recipe_json = m.recipe_json;
                }
                record.config_json = nlohmann::json({{"suite", req.suite},
                                                     {"limit", req.limit},
                                                     {"max_tokens", req.max_tokens},
                                                     {"samples", req.samples},
                                                     {"text", req.text},
                                                     {"model", m.model},
                                                     {"baseline", result->runs.front().manifest.model}})
                                         .dump();
                record.run_json = evaluation_run_json(result->runs[i]).dump();
                record.metrics = evaluation_run_metrics(*result, i);
                projects::record_evalsuite_run(project, record);
            }
        },
        std::nullopt, {}, [this, result] {
            m_result = std::move(*result);
            showResult();
            refreshStoredRuns();
            setStatus(tr("Done: %n model(s) evaluated%1.", nullptr, static_cast<int>(m_result.runs.size()))
                          .arg(m_project.isEmpty() ? tr(" (no project open: not stored)") : tr(" and stored in the project")));
        });
    updateButtons();
    return started;
}

void EvaluationView::refreshStoredRuns() {
    QList<qint64> checked;
    for (int i = 0; i < m_stored->count(); ++i)
        if (m_stored->item(i)->checkState() == Qt::Checked) checked << m_stored->item(i)->data(Qt::UserRole).toLongLong();
    m_stored->clear();
    std::vector<projects::StoredEvalsuiteRun> runs;
    if (!m_project.isEmpty() && QFileInfo::exists(m_project)) {
        try {
            runs = projects::stored_evalsuite_runs(m_project.toStdString());
        } catch (const std::exception& e) {
            setStatus(tr("Cannot read the project's evaluation runs: %1").arg(QString::fromUtf8(e.what())));
        }
    }
    for (const projects::StoredEvalsuiteRun& r : runs) {
        QString suite, items;
        try {
            const nlohmann::json j = nlohmann::json::parse(r.json);
            suite = QFileInfo(qs(j["manifest"]["suite"].get<std::string>())).fileName();
            items = QString::number(j["manifest"]["item_ids"].size());
        } catch (const std::exception&) {
        }
        auto* item = new QListWidgetItem(tr("#%1 %2 · %3 (%4 items) · %5")
                                             .arg(r.run_id)
                                             .arg(qs(r.name), suite, items,
                                                  QDateTime::fromSecsSinceEpoch(static_cast<qint64>(r.created_at)).toString(QStringLiteral("yyyy-MM-dd hh:mm"))),
                                         m_stored);
        item->setData(Qt::UserRole, static_cast<qlonglong>(r.run_id));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(r.run_id) ? Qt::Checked : Qt::Unchecked);
    }
    if (runs.empty()) {
        auto* item = new QListWidgetItem(m_project.isEmpty() ? tr("(no project open)") : tr("(no evaluation runs in the project yet)"), m_stored);
        item->setFlags(Qt::NoItemFlags);
    }
    updateButtons();
}

QList<qint64> EvaluationView::storedRunIds() const {
    QList<qint64> ids;
    for (int i = 0; i < m_stored->count(); ++i)
        if (m_stored->item(i)->flags() & Qt::ItemIsUserCheckable) ids << m_stored->item(i)->data(Qt::UserRole).toLongLong();
    return ids;
}

bool EvaluationView::checkStoredRun(qint64 runId, bool checked) {
    for (int i = 0; i < m_stored->count(); ++i)
        if (m_stored->item(i)->data(Qt::UserRole).toLongLong() == runId && (m_stored->item(i)->flags() & Qt::ItemIsUserCheckable)) {
            m_stored->item(i)->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
            return true;
        }
    return false;
}

bool EvaluationView::compareStored() {
    QList<qint64> ids;
    for (int i = 0; i < m_stored->count(); ++i)
        if (m_stored->item(i)->checkState() == Qt::Checked) ids << m_stored->item(i)->data(Qt::UserRole).toLongLong();
    if (ids.isEmpty()) {
        setStatus(tr("Tick the stored runs to compare; the first ticked is the baseline."));
        return false;
    }
    try {
        std::vector<EvaluationRun> runs;
        const std::vector<projects::StoredEvalsuiteRun> stored = projects::stored_evalsuite_runs(m_project.toStdString());
        for (qint64 id : ids)
            for (const projects::StoredEvalsuiteRun& r : stored)
                if (r.run_id == id)
                    runs.push_back(evaluation_run_from_json(nlohmann::json::parse(r.json),
                                                            m_project.toStdString() + " run " + std::to_string(id)));
        m_result = compare_evaluation_runs(std::move(runs), m_allowMixed->isChecked());
    } catch (const std::exception& e) {
        setStatus(tr("Cannot compare these runs: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    showResult();
    setStatus(tr("%n stored run(s) side by side.", nullptr, static_cast<int>(m_result.runs.size())));
    updateButtons();
    return true;
}

void EvaluationView::showResult() {
    const EvaluationTables& t = m_result.tables;
    if (m_result.runs.empty()) {
        m_chart->setGroupedBars({}, {}, {});
        m_chart->setTitle(tr("No evaluation yet: evaluate models or compare stored runs"));
        for (QTableWidget* table : {m_rates, m_flips, m_logits, m_cost, m_runs}) fillTable(table, {}, {});
        m_predictors->clear();
        m_checklist->clear();
        for (const ChecklistEntry& c : evaluation_checklist({}, nullptr)) {
            auto* item = new QTreeWidgetItem(m_checklist, {QStringLiteral("☐ ") + qs(c.item), qs(c.evidence)});
            item->setToolTip(1, qs(c.evidence));
        }
        m_checklist->resizeColumnToContents(0);
        updateButtons();
        return;
    }
    const std::vector<ModelSummary>& s = t.stats.summaries;
    QStringList models, categories;
    for (const std::string& m : t.models) models << qs(m);
    for (const auto& [name, _] : s.front().categories) categories << qs(name);
    categories << tr("overall");
    QVector<QVector<double>> values, lows, highs;
    for (const ModelSummary& m : s) {
        QVector<double> v, lo, hi;
        auto add = [&](const RateInterval& r) {
            v << (r.trials ? 100.0 * r.rate : std::nan(""));
            lo << (r.trials ? 100.0 * r.ci.low : std::nan(""));
            hi << (r.trials ? 100.0 * r.ci.high : std::nan(""));
        };
        for (const auto& [_, r] : m.categories) add(r);
        add(m.overall);
        values << v;
        lows << lo;
        highs << hi;
    }
    m_chart->setGroupedBars(categories, models, values);
    m_chart->setGroupedIntervals(lows, highs);
    m_chart->setTitle(tr("Success per category, %1 items (baseline %2)").arg(s.front().overall.trials).arg(models.front()));

    // Rates: overall, schema validity, tool calls, per-variant consistency, replicates.
    QStringList header{tr("measure")};
    header << models;
    QList<QStringList> rows;
    auto rateRow = [&](const QString& name, RateInterval ModelSummary::*field) {
        QStringList row{name};
        for (const ModelSummary& m : s) row << rateText(m.*field);
        rows << row;
    };
    rateRow(tr("overall success % [95 % CI]"), &ModelSummary::overall);
    rateRow(tr("schema validity"), &ModelSummary::json_valid);
    rateRow(tr("tool-call name accuracy"), &ModelSummary::tool_name);
    rateRow(tr("tool-call argument accuracy"), &ModelSummary::tool_arguments);
    for (size_t k = 0; k < s.front().variant_consistency.size(); ++k) {
        QStringList row{tr("consistency under %1").arg(qs(s.front().variant_consistency[k].first))};
        for (const ModelSummary& m : s) row << (k < m.variant_consistency.size() ? rateText(m.variant_consistency[k].second) : QString());
        rows << row;
    }
    QStringList flipsRow{tr("flips vs %1 (right→wrong / wrong→right)").arg(models.front())}, diffRow{tr("difference [paired bootstrap], McNemar p")};
    flipsRow << QStringLiteral("–");
    diffRow << QStringLiteral("–");
    for (const ModelComparison& c : t.stats.comparisons) {
        flipsRow << QStringLiteral("%1 / %2").arg(c.overall.right_to_wrong).arg(c.overall.wrong_to_right);
        diffRow << QStringLiteral("%1 pt [%2, %3], p %4")
                       .arg(QString::number(100.0 * c.overall.difference, 'f', 1), QString::number(100.0 * c.overall.bootstrap.low, 'f', 1),
                            QString::number(100.0 * c.overall.bootstrap.high, 'f', 1), numberText(c.overall.mcnemar_p, 3));
    }
    rows << flipsRow << diffRow;
    bool sampled = false;
    for (const ReplicateSpread& sp : t.spreads) sampled = sampled || sp.rates.n > 1;
    if (sampled) {
        QStringList row{tr("replicates: mean [95 % t CI]")};
        for (const ReplicateSpread& sp : t.spreads)
            row << QStringLiteral("%1 [%2, %3] (%4)").arg(percentText(sp.rates.mean), percentText(sp.rates.ci.low), percentText(sp.rates.ci.high)).arg(sp.rates.n);
        rows << row;
    }
    fillTable(m_rates, header, rows);

    // Flips: both outputs side by side.
    QList<QStringList> flipRows, flipTips;
    for (const FlipRow& f : t.flips) {
        flipRows << QStringList{qs(f.model), qs(f.id), qs(f.category), f.direction == "right_to_wrong" ? tr("right → wrong") : tr("wrong → right"),
                                oneLine(f.baseline_output, 90), oneLine(f.model_output, 90)};
        flipTips << QStringList{QString(), qs(f.user_text), QString(), QString(), qs(f.baseline_output), qs(f.model_output)};
    }
    fillTable(m_flips, {tr("model"), tr("item"), tr("category"), tr("flip"), tr("%1 answered").arg(models.front()), tr("model answered")},
              flipRows, flipTips);
    if (flipRows.size() > 0) {
        m_flips->setColumnWidth(4, std::max(m_flips->columnWidth(4), 320));
    }

    QList<QStringList> logitRows;
    for (const EvaluationRun& r : m_result.runs) {
        if (!r.logits) continue;
        const LogitMetrics& l = *r.logits;
        logitRows << QStringList{qs(r.manifest.label), numberText(l.ppl), numberText(l.delta_ppl), numberText(l.kl_mean), numberText(l.kl_p99),
                                 l.top1_agreement ? percentText(*l.top1_agreement) : QStringLiteral("–"),
                                 QStringLiteral("%1 (%2 windows of %3, %4 predictions)").arg(QFileInfo(qs(l.text)).fileName(), qs(l.windows)).arg(l.window).arg(l.tokens)};
    }
    fillTable(m_logits, {tr("model"), tr("perplexity"), tr("Δppl"), tr("KL mean (nats)"), tr("KL p99"), tr("top-1 agreement"), tr("text")}, logitRows);
    QStringList predictors;
    for (const FlipPredictor& p : t.predictors) predictors << QStringLiteral("%1 %2").arg(qs(p.metric), numberText(p.spearman, 2));
    m_predictors->setText(logitRows.isEmpty()
                              ? tr("No logit metrics: give a real-text file to measure perplexity, KL and top-1 agreement against the baseline.")
                              : predictors.isEmpty()
                                    ? QString()
                                    : tr("How well each predicts the right→wrong flips across the quantized runs (Spearman rank correlation; "
                                         "NaN with fewer than 3 runs): %1")
                                          .arg(predictors.join(QStringLiteral(" · "))));

    // Cost: weights in the packed layout, KV cache, measured speed, the GPU estimate.
    QList<QStringList> costRows, costTips;
    QString gpu = m_result.runs.front().cost.estimates.empty() ? QString() : qs(m_result.runs.front().cost.estimates.front().gpu);
    for (const EvaluationRun& r : m_result.runs) {
        const ServingCost& c = r.cost;
        const double kv8k = c.kv.bytes_per_token * 8192.0;
        costRows << QStringList{qs(r.manifest.label),
                                qs(r.manifest.quant_scheme),
                                mib(static_cast<double>(c.weights.bytes())),
                                QString::number(c.weights.bits_per_parameter(), 'f', 2),
                                QStringLiteral("%1 (%2)").arg(mib(kv8k), qs(c.kv.format)),
                                QString::number(c.measured.prefill_tokens_per_second, 'f', 0),
                                QString::number(1000.0 * c.measured.ttft_mean_s, 'f', 0),
                                QString::number(c.measured.decode_tokens_per_second, 'f', 1),
                                numberText(c.seconds_per_success, 3),
                                c.estimates.empty() ? QString() : QString::number(c.estimates.front().decode_tokens_per_second, 'f', 0),
                                c.estimates.empty() ? QString() : numberText(c.estimates.front().seconds_per_success, 3)};
        costTips << QStringList{qs(r.manifest.model_path), qs(r.manifest.quant_formats),
                                tr("codes %1, scales %2, global scales %3, unquantized %4 — %5")
                                    .arg(mib(static_cast<double>(c.weights.code_bytes)), mib(static_cast<double>(c.weights.scale_bytes)),
                                         QString::number(c.weights.global_scale_bytes) + QStringLiteral(" B"),
                                         mib(static_cast<double>(c.weights.high_precision_bytes)), qs(c.weights.layout))};
    }
    fillTable(m_cost,
              {tr("model"), tr("scheme"), tr("weights"), tr("bits/param"), tr("KV cache @ 8k"), tr("prefill tok/s"), tr("TTFT ms"),
               tr("decode tok/s"), tr("s / success"), gpu.isEmpty() ? QString() : tr("%1 decode tok/s (estimate)").arg(gpu),
               gpu.isEmpty() ? QString() : tr("%1 s / success (estimate)").arg(gpu)},
              costRows, costTips);
    m_cost->setToolTip(tr("Speeds measured here (%1) simulate the formats in float32; the GPU columns are bandwidth estimates: "
                          "bytes read per decoded token (weights + KV cache at %2 tokens) ÷ memory bandwidth.")
                           .arg(qs(m_result.runs.front().cost.measured.device))
                           .arg(m_result.runs.front().cost.estimates.empty() ? 0 : m_result.runs.front().cost.estimates.front().context));

    QList<QStringList> runRows;
    for (size_t i = 0; i < m_result.runs.size(); ++i) {
        const RunManifest& m = m_result.runs[i].manifest;
        runRows << QStringList{qs(m.label), qs(m.model_kind), qs(m.model_sha256.substr(0, 16)), qs(m.quant_scheme), qs(m.quant_formats),
                               qs(m.decoding.description), qs(m.chat_template_sha256.substr(0, 16)), qs(m.tools_mode),
                               QStringLiteral("%1 (%2)").arg(qs(m.quantlab_version), qs(m.quantlab_commit.substr(0, 10))), qs(m.torch_version),
                               qs(m.started_at)};
    }
    fillTable(m_runs,
              {tr("run"), tr("model"), tr("sha256"), tr("scheme"), tr("formats"), tr("decoding"), tr("chat template"), tr("tools"),
               tr("QuantLab"), tr("LibTorch"), tr("started")},
              runRows);
    if (!t.warnings.empty()) {
        QStringList w;
        for (const std::string& x : t.warnings) w << qs(x);
        m_runs->setToolTip(w.join(QLatin1Char('\n')));
    }

    m_checklist->clear();
    for (const ChecklistEntry& c : t.checklist) {
        auto* item = new QTreeWidgetItem(m_checklist, {(c.done ? QStringLiteral("☑ ") : QStringLiteral("☐ ")) + qs(c.item), qs(c.evidence)});
        item->setToolTip(1, qs(c.evidence));
        if (!c.done) item->setForeground(0, palette().color(QPalette::Disabled, QPalette::Text));
    }
    m_checklist->resizeColumnToContents(0);
    updateButtons();
}

void EvaluationView::showTab(const QString& name) {
    for (int i = 0; i < m_tabs->count(); ++i)
        if (m_tabs->tabText(i) == name) m_tabs->setCurrentIndex(i);
}

QList<QStringList> EvaluationView::tableRows(const QString& tab) const {
    if (tab == QLatin1String("Success")) return rowsOf(m_rates);
    if (tab == QLatin1String("Flips")) return rowsOf(m_flips);
    if (tab == QLatin1String("Logits")) return rowsOf(m_logits);
    if (tab == QLatin1String("Cost")) return rowsOf(m_cost);
    if (tab == QLatin1String("Runs")) return rowsOf(m_runs);
    if (tab == QLatin1String("Checklist")) {
        QList<QStringList> rows;
        for (int i = 0; i < m_checklist->topLevelItemCount(); ++i)
            rows << QStringList{m_checklist->topLevelItem(i)->text(0), m_checklist->topLevelItem(i)->text(1)};
        return rows;
    }
    return {};
}

bool EvaluationView::openFlip(int row) {
    const std::vector<FlipRow>& flips = m_result.tables.flips;
    if (row < 0 || row >= static_cast<int>(flips.size())) return false;
    const FlipRow& f = flips[static_cast<size_t>(row)];
    QString path;
    for (const EvaluationRun& r : m_result.runs)
        if (r.manifest.label == f.model) path = qs(r.manifest.model_path);
    emit generateRequested(qs(f.user_text), path);
    return true;
}

QStringList EvaluationView::exportCsv(const QString& folder) {
    QStringList written;
    if (!hasResult()) return written;
    try {
        for (const std::string& p : write_evaluation_csv(m_result, folder.toStdString())) written << qs(p);
        setStatus(tr("Wrote %n CSV table(s) to %1.", nullptr, static_cast<int>(written.size())).arg(folder));
    } catch (const std::exception& e) {
        setStatus(tr("Export failed: %1").arg(QString::fromUtf8(e.what())));
    }
    return written;
}

}  // namespace ql
