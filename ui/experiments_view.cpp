// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/experiments_view.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>

#include "engine/api/evalsuite_api.h"
#include "engine/api/experiment_api.h"
#include "engine/core/errors.h"
#include "engine/experiments/reproducibility_manifest.h"
#include "projects/experiment_grid.h"
#include "projects/project_file.h"
#include "ui/background_call.h"
#include "ui/combo_width.h"
#include "ui/experiment_result_panel.h"
#include "ui/progress_estimate.h"

namespace ql {
namespace {

enum Column { ColCell, ColReplicate, ColMethod, ColRecipe, ColStatus, ColCount };

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

ExperimentsView::ExperimentsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Experiment:"), this));
    m_experiment = new QComboBox(this);
    m_experiment->setObjectName(QStringLiteral("experimentChoice"));
    for (const std::string& name : experiments::experiment_template_names()) {
        QString title;
        try {
            title = qs(experiments::load_experiment(name).title);
        } catch (const std::exception&) {
        }
        m_experiment->addItem(qs(name), qs(name));
        m_experiment->setItemData(m_experiment->count() - 1, title, Qt::ToolTipRole);
    }
    controls->addWidget(m_experiment);
    auto* openFile = new QPushButton(tr("File…"), this);
    openFile->setObjectName(QStringLiteral("experimentOpenFile"));
    openFile->setToolTip(tr("Open an experiment JSON file (docs/EXPERIMENTS.md \"The file\")"));
    controls->addWidget(openFile);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Model:"), this));
    m_model = new QComboBox(this);
    m_model->setObjectName(QStringLiteral("experimentModel"));
    m_model->setEditable(true);
    m_model->addItem(QStringLiteral("demo"));
    limitComboWidth(m_model, 10);
    m_model->setToolTip(tr("demo, or a model folder (an HF model such as all-MiniLM-L6-v2, or a QuantLab checkpoint)"));
    controls->addWidget(m_model, 1);
    auto* browse = new QPushButton(tr("Folder…"), this);
    browse->setObjectName(QStringLiteral("experimentModelFolder"));
    controls->addWidget(browse);
    controls->addStretch(0);
    layout->addLayout(controls);
    // A second row: the window fits 1280 pixels with the navigation beside it.
    controls = new QHBoxLayout;
    auto spin = [this, &controls](const QString& label, const QString& name, int min, int max, const QString& special) {
        controls->addWidget(new QLabel(label, this));
        auto* s = new QSpinBox(this);
        s->setObjectName(name);
        s->setRange(min, max);
        if (!special.isEmpty()) s->setSpecialValueText(special);
        controls->addWidget(s);
        return s;
    };
    m_replicates = spin(tr("Replicates:"), QStringLiteral("experimentReplicates"), 1, 1000, {});
    m_steps = spin(tr("Steps:"), QStringLiteral("experimentSteps"), 0, 1000000, tr("file's"));
    m_steps->setToolTip(tr("Training steps of QAT / QAD runs (file's: as the experiment says)"));
    m_evalSamples = spin(tr("Eval:"), QStringLiteral("experimentEvalSamples"), 0, 100000, tr("file's"));
    m_evalSamples->setToolTip(tr("Held-out problems each run is scored on (file's: as the experiment says)"));
    controls->addSpacing(12);
    // Named for what they run: the window's tool bar above has a Start of its own (the recipe's run).
    m_start = new QPushButton(tr("Run Experiment"), this);
    m_start->setObjectName(QStringLiteral("experimentStart"));
    m_start->setToolTip(tr("Make the experiment's runs not done yet, as runs of the open project (the tool bar's Run Recipe runs the recipe editor's recipe instead)"));
    m_stop = new QPushButton(tr("Stop After This Run"), this);
    m_stop->setObjectName(QStringLiteral("experimentStop"));
    m_stop->setToolTip(tr("Stop after the current run; Run Experiment again continues where it stopped"));
    m_stop->setEnabled(false);
    controls->addWidget(m_start);
    controls->addWidget(m_stop);
    controls->addStretch(1);
    layout->addLayout(controls);
    // A third row: the runs' data. Empty = the experiment's own; a sentence encoder (MiniLM) takes
    // a template's encoder form, which needs sentences (docs/EXPERIMENTS.md "Sentence encoders").
    controls = new QHBoxLayout;
    auto path = [this, &controls](const QString& label, const QString& name, const QString& placeholder,
                                  const QString& tip, const QString& dialogTitle, const QString& filter) {
        controls->addWidget(new QLabel(label, this));
        auto* edit = new QLineEdit(this);
        edit->setObjectName(name);
        edit->setPlaceholderText(placeholder);
        edit->setToolTip(tip);
        edit->setClearButtonEnabled(true);
        controls->addWidget(edit, 1);
        auto* browse = new QPushButton(tr("File…"), this);
        browse->setObjectName(name + QStringLiteral("File"));
        browse->setToolTip(tip);
        controls->addWidget(browse);
        connect(browse, &QPushButton::clicked, this, [this, edit, dialogTitle, filter] {
            const QString file = QFileDialog::getOpenFileName(this, dialogTitle, QString(), filter);
            if (file.isEmpty()) return;
            edit->setText(file);
            reloadSpec();
        });
        connect(edit, &QLineEdit::editingFinished, this, &ExperimentsView::reloadSpec);
        return edit;
    };
    m_data = path(tr("Data:"), QStringLiteral("experimentData"), tr("the experiment's"),
                  tr("Every run's data: training, calibration and held-out (empty: as the experiment says). "
                     "A sentence encoder needs sentences, one per line; the last tenth is held out."),
                  tr("Data for every run"), tr("Text (*.txt *.tsv);;All files (*)"));
    controls->addSpacing(12);
    m_pairs = path(tr("Pairs:"), QStringLiteral("experimentPairs"), tr("none"),
                   tr("Sentence encoders: sentence1<TAB>sentence2<TAB>score lines, scored as the Spearman "
                      "correlation of the runs' cosines with the scores"),
                   tr("Sentence pairs with scores"), tr("Pairs (*.tsv *.txt);;All files (*)"));
    controls->addSpacing(12);
    m_evalData = path(tr("Eval data:"), QStringLiteral("experimentEvalData"), tr("data's held-out part"),
                      tr("Every run is scored on all of this text (a separate evaluation text) instead of the "
                         "held-out tenth of Data"),
                      tr("Evaluation data for every run"), tr("Text (*.txt);;All files (*)"));
    controls->addSpacing(12);
    m_suite = path(tr("Suite:"), QStringLiteral("experimentSuite"), tr("none"),
                   tr("An eval suite every run's model also answers beside the FP model (\"default\" or a JSONL "
                      "file): success per category, schema validity and answer flips become metrics"),
                   tr("Eval suite"), tr("Eval suites (*.jsonl);;All files (*)"));
    layout->addLayout(controls);

    m_claim = new QLabel(this);
    m_claim->setObjectName(QStringLiteral("experimentClaim"));
    m_claim->setWordWrap(true);
    m_claim->setTextFormat(Qt::RichText);
    layout->addWidget(m_claim);

    auto* split = new QSplitter(Qt::Horizontal, this);
    layout->addWidget(split, 1);
    auto* left = new QWidget(split);
    auto* ll = new QVBoxLayout(left);
    ll->setContentsMargins(0, 0, 0, 0);
    m_table = new QTableWidget(0, ColCount, left);
    m_table->setObjectName(QStringLiteral("experimentRuns"));
    m_table->setHorizontalHeaderLabels({tr("cell"), tr("rep."), tr("method"), tr("recipe"), tr("status")});
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setTextElideMode(Qt::ElideMiddle);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->horizontalHeader()->setStretchLastSection(true);
    ll->addWidget(m_table, 1);
    m_estimate = new QLabel(left);
    m_estimate->setObjectName(QStringLiteral("experimentEstimate"));
    m_estimate->setWordWrap(true);
    ll->addWidget(m_estimate);
    m_bar = new QProgressBar(left);
    m_bar->setObjectName(QStringLiteral("experimentProgressBar"));
    m_bar->setTextVisible(true);
    ll->addWidget(m_bar);
    m_progress = new QLabel(left);
    m_progress->setObjectName(QStringLiteral("experimentProgress"));
    m_progress->setWordWrap(true);
    ll->addWidget(m_progress);
    m_result = new ExperimentResultPanel(split);
    m_result->setObjectName(QStringLiteral("experimentResult"));
    split->addWidget(left);
    split->addWidget(m_result);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setSizes({600, 820});

    m_runner = new JobRunner(this);
    auto* tick = new QTimer(this);  // the ETA counts down between the runs' reports
    tick->setInterval(1000);
    connect(tick, &QTimer::timeout, this, &ExperimentsView::updateProgress);
    connect(m_runner, &JobRunner::started, tick, [tick] { tick->start(); });
    connect(m_runner, &JobRunner::finished, tick, &QTimer::stop);
    connect(m_runner, &JobRunner::progressChanged, this, &ExperimentsView::updateProgress);
    connect(m_runner, &JobRunner::finished, this, &ExperimentsView::onFinished);

    connect(m_experiment, &QComboBox::activated, this, [this](int i) { loadExperiment(m_experiment->itemData(i).toString()); });
    connect(openFile, &QPushButton::clicked, this, &ExperimentsView::chooseFile);
    connect(browse, &QPushButton::clicked, this, &ExperimentsView::chooseModelFolder);
    connect(m_model->lineEdit(), &QLineEdit::editingFinished, this, &ExperimentsView::reloadSpec);
    connect(m_model, &QComboBox::activated, this, &ExperimentsView::reloadSpec);
    for (QSpinBox* s : {m_replicates, m_steps, m_evalSamples})
        connect(s, &QSpinBox::valueChanged, this, &ExperimentsView::reloadSpec);
    connect(m_start, &QPushButton::clicked, this, [this] { start(); });
    connect(m_stop, &QPushButton::clicked, this, &ExperimentsView::stop);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (row >= 0 && row < static_cast<int>(m_plan.size())) m_result->selectCell(qs(m_plan[row].cell->key));
    });
    connect(m_result, &ExperimentResultPanel::runSelected, this, [this](const QString& cell, int replicate, qint64) {
        for (int row = 0; row < static_cast<int>(m_plan.size()); ++row)
            if (qs(m_plan[row].cell->key) == cell && m_plan[row].replicate == replicate) {
                const QSignalBlocker block(m_table);
                m_table->selectRow(row);
                m_table->scrollToItem(m_table->item(row, 0));
            }
    });

    if (m_experiment->count() > 0) loadExperiment(m_experiment->itemData(0).toString());
}

ExperimentsView::~ExperimentsView() {
    // The worker reports to this view: it must be gone before the view's members are.
    delete m_runner;
    m_runner = nullptr;
}

void ExperimentsView::setProject(const QString& path) {
    if (path == m_project) return;
    m_project = path;
    m_snapshot = {};
    refresh();
}

bool ExperimentsView::loadExperiment(const QString& templateOrFile) {
    if (isRunning()) return false;
    experiments::ExperimentSpec plain;
    try {
        plain = experiments::load_experiment(templateOrFile.toStdString());
    } catch (const std::exception& e) {
        m_lastError = QString::fromUtf8(e.what());
        m_claim->setText(QStringLiteral("<b>%1</b>").arg(m_lastError.toHtmlEscaped()));
        return false;
    }
    m_source = templateOrFile;
    int index = m_experiment->findData(templateOrFile);
    if (index < 0) {
        m_experiment->addItem(QFileInfo(templateOrFile).fileName(), templateOrFile);
        index = m_experiment->count() - 1;
        m_experiment->setItemData(index, templateOrFile, Qt::ToolTipRole);
    }
    {
        const QSignalBlocker b1(m_experiment), b2(m_replicates), b3(m_steps), b4(m_evalSamples), b5(m_model), b6(m_data),
            b7(m_pairs), b8(m_evalData);
        m_experiment->setCurrentIndex(index);
        m_replicates->setValue(static_cast<int>(plain.replicates));
        m_steps->setValue(0);
        m_evalSamples->setValue(0);
        m_defaultModel = plain.cells.empty() ? QStringLiteral("demo") : qs(plain.cells.front().parameters.model);
        m_model->setCurrentText(m_defaultModel);
        // The data overrides belong to the model chosen with them, which a new experiment resets.
        m_data->clear();
        m_pairs->clear();
        m_evalData->clear();
    }
    m_lastError.clear();
    reloadSpec();
    return m_lastError.isEmpty();
}

void ExperimentsView::setModel(const QString& model) {
    m_model->setCurrentText(model);
    reloadSpec();
}
void ExperimentsView::setReplicates(int replicates) { m_replicates->setValue(replicates); }
void ExperimentsView::setSteps(int steps) { m_steps->setValue(steps); }
void ExperimentsView::setEvalSamples(int samples) { m_evalSamples->setValue(samples); }
void ExperimentsView::setData(const QString& data) {
    m_data->setText(data);
    reloadSpec();
}
void ExperimentsView::setPairs(const QString& pairs) {
    m_pairs->setText(pairs);
    reloadSpec();
}
void ExperimentsView::setEvalData(const QString& data) {
    m_evalData->setText(data);
    reloadSpec();
}
void ExperimentsView::setSuite(const QString& suite) {
    m_suite->setText(suite);
    reloadSpec();
}

void ExperimentsView::reloadSpec() {
    if (m_source.isEmpty() || isRunning()) return;
    experiments::ExperimentOverrides o;
    o.replicates = m_replicates->value();
    o.steps = m_steps->value();
    o.eval_samples = m_evalSamples->value();
    const QString model = m_model->currentText().trimmed();
    // Only a changed model is an override: the file's own is the same experiment (identity).
    if (!model.isEmpty() && model != m_defaultModel) o.model = model.toStdString();
    o.data = m_data->text().trimmed().toStdString();
    o.pairs = m_pairs->text().trimmed().toStdString();
    o.eval_data = m_evalData->text().trimmed().toStdString();
    o.suite = m_suite->text().trimmed().toStdString();
    try {
        // One metric per category of the suite (as quantlab-cli experiment run --suite).
        if (!o.suite.empty()) {
            const SuiteOverview suite = describe_suite(o.suite);
            for (const auto& [category, items] : suite.categories) o.suite_metric_categories.push_back(category);
            o.suite_has_json = !suite.json_categories.empty();
        }
        // A sentence encoder takes a template's encoder form; without sentences in Data the
        // engine's error says what to give (shown above the table).
        o.encoder = !o.model.empty() && model_is_sentence_encoder(o.model);
        auto spec = std::make_shared<experiments::ExperimentSpec>(experiments::load_experiment(m_source.toStdString(), o));
        check_experiment_models(*spec);
        m_spec = spec;
        m_plan = experiments::plan_runs(*spec);
        m_lastError.clear();
    } catch (const std::exception& e) {
        m_lastError = QString::fromUtf8(e.what());
        m_claim->setText(QStringLiteral("<b>%1</b>").arg(m_lastError.toHtmlEscaped()));
        m_spec.reset();
        m_plan.clear();
        rebuildTable();
        return;
    }
    const experiments::ExperimentSpec& s = *m_spec;
    QString text = QStringLiteral("<b>%1</b>").arg(qs(s.title).toHtmlEscaped());
    if (!s.claim.empty()) text += QStringLiteral(" — ") + qs(s.claim).toHtmlEscaped();
    if (!s.source.empty()) text += QStringLiteral(" <i>(%1)</i>").arg(qs(s.source).toHtmlEscaped());
    m_claim->setText(text);
    m_snapshot = {};
    m_live.assign(m_plan.size(), 0);
    rebuildTable();
    refresh();
}

void ExperimentsView::rebuildTable() {
    m_table->setRowCount(static_cast<int>(m_plan.size()));
    for (int row = 0; row < static_cast<int>(m_plan.size()); ++row) {
        const experiments::PlannedRun& r = m_plan[row];
        const experiments::RunParameters& p = r.cell->parameters;
        auto set = [this, row](int col, const QString& text, const QString& tip = {}) {
            auto* item = new QTableWidgetItem(text);
            item->setToolTip(tip.isEmpty() ? text : tip);
            m_table->setItem(row, col, item);
        };
        set(ColCell, experimentCellLabel(*r.cell), qs(r.cell->key));
        set(ColReplicate, QString::number(r.replicate), tr("seed %1").arg(r.seed));
        set(ColMethod, qs(p.method));
        if (p.method == "mixed") {
            // A mixed run's recipe is the search's plan: its base recipe is never used.
            QStringList menu;
            for (const std::string& entry : p.menu) menu << qs(entry);
            set(ColRecipe, tr("plan ≤ %1 bits").arg(p.bits, 0, 'g', 4),
                tr("the sensitivity search's per-layer plan over %1 within %2 bits per parameter")
                    .arg(menu.join(QLatin1Char('+')))
                    .arg(p.bits, 0, 'g', 4));
        } else {
            set(ColRecipe, qs(p.recipe));
        }
        set(ColStatus, tr("queued"));
    }
    m_table->resizeColumnsToContents();
    updateStatuses();
}

void ExperimentsView::refresh() {
    if (!m_spec) return;
    const std::string project = m_project.toStdString(), identity = m_spec->identity_sha256;
    ++m_loads;
    backgroundCall<ExperimentSnapshot>(
        this, [project, identity] { return load_experiment_snapshot(project, identity); },
        [this, identity](std::optional<ExperimentSnapshot>& snapshot, const QString& error) {
            --m_loads;
            if (!m_spec || m_spec->identity_sha256 != identity) return;  // another experiment by now
            if (!error.isEmpty()) {
                m_lastError = error;
                emit statusMessage(tr("Experiments: %1").arg(error), 8000);
            }
            if (snapshot) onSnapshot(*snapshot);
            emit snapshotLoaded();
        });
}

void ExperimentsView::onSnapshot(const ExperimentSnapshot& snapshot) {
    m_snapshot = snapshot;
    updateStatuses();
    m_result->setSnapshot(snapshot);
}

void ExperimentsView::updateStatuses() {
    for (int row = 0; row < static_cast<int>(m_plan.size()) && row < m_table->rowCount(); ++row) {
        const experiments::PlannedRun& r = m_plan[row];
        QString status = tr("queued");
        const auto it = m_snapshot.runs.find({r.cell->key, r.replicate});
        if (it != m_snapshot.runs.end()) {
            if (it->second.kind == ExperimentRunState::Kind::Done) status = tr("done (run %1)").arg(it->second.run_id);
            else if (it->second.kind == ExperimentRunState::Kind::Claimed) status = tr("running elsewhere");
        }
        if (row < static_cast<int>(m_live.size()) && m_live[row] == 1) status = tr("running");
        if (row < static_cast<int>(m_live.size()) && m_live[row] == 2 && status == tr("queued")) status = tr("done");
        if (QTableWidgetItem* item = m_table->item(row, ColStatus)) item->setText(status);
    }
    m_table->resizeColumnToContents(ColStatus);
    m_table->resizeRowsToContents();
    updateProgress();
}

double ExperimentsView::estimatedSeconds() const {
    // Measured run times of this experiment when there are some (per method), else the estimate.
    std::map<std::string, std::pair<double, int>> measured;
    for (const experiments::PlannedRun& r : m_plan) {
        const auto it = m_snapshot.runs.find({r.cell->key, r.replicate});
        if (it != m_snapshot.runs.end() && it->second.kind == ExperimentRunState::Kind::Done && it->second.seconds > 0) {
            auto& m = measured[r.cell->parameters.method];
            m.first += it->second.seconds;
            ++m.second;
        }
    }
    double total = 0;
    for (std::size_t i = 0; i < m_plan.size(); ++i) {
        const experiments::PlannedRun& r = m_plan[i];
        const auto it = m_snapshot.runs.find({r.cell->key, r.replicate});
        const bool done = (it != m_snapshot.runs.end() && it->second.kind == ExperimentRunState::Kind::Done) ||
                          (i < m_live.size() && m_live[i] == 2);
        if (done) continue;
        const auto m = measured.find(r.cell->parameters.method);
        double seconds = m != measured.end() ? m->second.first / m->second.second : estimated_run_seconds(r.cell->parameters);
        if (static_cast<int>(i) == m_current && m_runClock.isValid())
            seconds = std::max(0.0, seconds - m_runClock.elapsed() / 1000.0);
        total += seconds;
    }
    return total;
}

QString ExperimentsView::progressText() const { return m_progress->text(); }

void ExperimentsView::updateProgress() {
    int done = 0, running = 0, queued = 0;
    for (int row = 0; row < static_cast<int>(m_plan.size()); ++row) {
        const experiments::PlannedRun& r = m_plan[row];
        const auto it = m_snapshot.runs.find({r.cell->key, r.replicate});
        const bool live = row < static_cast<int>(m_live.size());
        if ((it != m_snapshot.runs.end() && it->second.kind == ExperimentRunState::Kind::Done) || (live && m_live[row] == 2)) ++done;
        else if ((live && m_live[row] == 1) || (it != m_snapshot.runs.end() && it->second.kind == ExperimentRunState::Kind::Claimed))
            ++running;
        else
            ++queued;
    }
    const int total = static_cast<int>(m_plan.size());
    const QString time = qs(format_duration(estimatedSeconds()));
    if (m_spec)
        m_estimate->setText(done == total ? tr("%1 cells × %2 replicates = %3 runs, all done")
                                                .arg(m_spec->cells.size())
                                                .arg(m_spec->replicates)
                                                .arg(total)
                                          : tr("%1 cells × %2 replicates = %3 runs; %4 to make: about %5 on this machine")
                                                .arg(m_spec->cells.size())
                                                .arg(m_spec->replicates)
                                                .arg(total)
                                                .arg(total - done)
                                                .arg(time));
    else
        m_estimate->clear();
    m_bar->setRange(0, std::max(1, total));
    m_bar->setValue(done);
    m_bar->setFormat(tr("%1 of %2 runs").arg(done).arg(total));
    QString text = tr("%1 done · %2 running · %3 queued").arg(done).arg(running).arg(queued);
    if (isRunning()) {
        text += tr(" — ETA %1").arg(time);
        if (m_current >= 0 && m_current < total) {
            const experiments::PlannedRun& r = m_plan[m_current];
            text += tr("\nnow: run %1/%2, %3 #%4").arg(m_current + 1).arg(total).arg(experimentCellLabel(*r.cell)).arg(r.replicate);
            const ProgressEstimate& p = m_runner->progress();
            if (!p.phase().empty())
                text += tr(": %1 %2/%3").arg(qs(p.phase())).arg(p.done()).arg(p.total());
        }
        if (m_stopping) text += tr("\nstopping after the current run…");
    }
    m_progress->setText(text);
}

bool ExperimentsView::start() {
    if (!m_spec || isRunning()) return false;
    if (m_project.isEmpty()) {
        m_lastError = tr("open or create a project first: an experiment's runs are runs of a project");
        emit statusMessage(m_lastError, 8000);
        return false;
    }
    try {
        // Here rather than in reloadSpec: it loads the grid's models, once per Start rather than on
        // every edit, and a recipe that misses its model is shown as plan errors are, before the
        // project is touched (not as the failure of a run in the middle of the grid).
        check_experiment_recipes(*m_spec);
    } catch (const std::exception& e) {
        m_lastError = QString::fromUtf8(e.what());
        m_claim->setText(QStringLiteral("<b>%1</b>").arg(m_lastError.toHtmlEscaped()));
        emit statusMessage(m_lastError, 10000);
        return false;
    }
    auto spec = m_spec;
    const std::string project = m_project.toStdString();
    ExperimentsView* self = this;
    m_stopping = false;
    m_current = -1;
    m_live.assign(m_plan.size(), 0);
    const bool started = m_runner->start(
        tr("Experiment %1").arg(qs(spec->name)), [spec, project, self](JobSink& sink, const CancellationToken& cancel) {
            projects::ProjectFile file = std::filesystem::exists(project)
                                             ? projects::ProjectFile::open(project, projects::OpenMode::ReadWrite)
                                             : projects::ProjectFile::create(project);
            const std::string environment = experiments::environment_manifest_json();
            const int64_t id = projects::begin_experiment(file, *spec, environment, {"quantlab", "Experiments view", spec->name});
            const std::vector<experiments::PlannedRun> plan = experiments::plan_runs(*spec);
            projects::run_experiment_grid(file, project, id, *spec, plan, environment, sink, cancel,
                                          [self](const projects::ExperimentGridEvent& e) {
                                              const int kind = static_cast<int>(e.kind), index = static_cast<int>(e.index);
                                              const qint64 run = e.run_id;
                                              const double seconds = e.seconds;
                                              QMetaObject::invokeMethod(
                                                  self, [self, kind, index, run, seconds] { self->onGridEvent(kind, index, run, seconds); },
                                                  Qt::QueuedConnection);
                                          });
        });
    if (!started) return false;
    for (QWidget* w : std::initializer_list<QWidget*>{m_experiment, m_model, m_replicates, m_steps, m_evalSamples, m_data, m_pairs,
                                                          m_evalData, m_suite, m_start})
        w->setEnabled(false);
    m_stop->setEnabled(true);
    updateProgress();
    return true;
}

void ExperimentsView::stop() {
    if (!isRunning()) return;
    m_stopping = true;
    m_runner->cancel();  // the grid checks it between runs; the current run finishes
    m_stop->setEnabled(false);
    updateProgress();
}

bool ExperimentsView::isRunning() const { return m_runner && m_runner->isRunning(); }

void ExperimentsView::onGridEvent(int kind, int index, qint64 runId, double seconds) {
    if (index < 0 || index >= static_cast<int>(m_live.size())) return;
    using K = projects::ExperimentGridEvent::Kind;
    switch (static_cast<K>(kind)) {
    case K::Started:
        m_current = index;
        m_live[index] = 1;
        m_runClock.start();
        break;
    case K::Finished:
        m_live[index] = 2;
        m_seconds += seconds;
        ++m_finishedHere;
        m_current = -1;
        emit statusMessage(tr("Experiment run %1/%2 done in %3 (run %4)")
                               .arg(index + 1)
                               .arg(m_plan.size())
                               .arg(qs(format_duration(seconds)))
                               .arg(runId),
                           5000);
        refresh();  // the result grows run by run
        break;
    case K::Skipped:
    case K::Taken:
        break;
    }
    updateStatuses();
}

void ExperimentsView::onFinished(JobRunner::Outcome outcome, const QString& message) {
    m_current = -1;
    for (int& live : m_live)
        if (live == 1) live = 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_experiment, m_model, m_replicates, m_steps, m_evalSamples, m_data, m_pairs,
                                                          m_evalData, m_suite, m_start})
        w->setEnabled(true);
    m_stop->setEnabled(false);
    QString error;
    if (outcome == JobRunner::Outcome::Failed) {
        error = message;
        m_lastError = message;
        emit statusMessage(tr("Experiment failed: %1").arg(message), 10000);
    }
    const bool stopped = m_stopping;
    m_stopping = false;
    refresh();
    emit experimentFinished(stopped, error);
}

bool ExperimentsView::waitForFinished(int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    if (!m_runner->waitForFinished(timeoutMs)) return false;
    while (m_loads > 0 && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    return m_loads == 0;
}

void ExperimentsView::chooseFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open an experiment"), QString(), tr("Experiment (*.json)"));
    if (!path.isEmpty() && !loadExperiment(path)) emit statusMessage(m_lastError, 10000);
}

void ExperimentsView::chooseModelFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder (HF model or QuantLab checkpoint)"));
    if (dir.isEmpty()) return;
    if (m_model->findText(dir) < 0) m_model->addItem(dir);
    setModel(dir);
}

}  // namespace ql
