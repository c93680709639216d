// SPDX-License-Identifier: GPL-3.0-or-later
// The Evaluation view (docs/GUI.md "Evaluation"): judge the open model and quantized runs of it
// by their answers to an eval suite (engine/api/evalsuite_api.h), the open model the baseline.
// A new evaluation runs on its own worker with progress and ETA and is recorded in the project,
// one run of kind "evalsuite" per model (projects/evalsuite_records.h); stored runs are listed
// and any of them can be put side by side (runs made with other settings only when allowed).
// The result tabs: success per category as bars with 95 % intervals side by side, schema
// validity and tool-call accuracy; the flipped items with both outputs next to each other
// (double-click: the Generate view at that prompt); the logit metrics on real text and how each
// predicts the flips; what each format costs to serve; the manifests; and the practitioner's
// checklist ticked from what was measured. Every table exports as CSV.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include "engine/api/evalsuite_api.h"
#include "ui/run_checklist.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableWidget;
class QTreeWidget;

namespace ql {

class BarChart;
class JobRunner;
class WrappingLabel;

class EvaluationView : public QWidget {
    Q_OBJECT
public:
    explicit EvaluationView(QWidget* parent = nullptr);
    ~EvaluationView() override;

    // The project new runs are recorded in and stored runs are read from ("" = none).
    void setProject(const QString& path);
    // The open model: the baseline of a new evaluation.
    void setReferenceModel(const QString& path, bool generates);
    using Candidate = RunCandidate;
    // Quantized runs of the project to evaluate beside the baseline; kept checked by path.
    void setCandidates(const QList<Candidate>& candidates);
    bool checkCandidate(const QString& path, bool checked = true);

    void setSuite(const QString& suite);  // "default" or a suite file
    void setMaxTokens(int tokens);
    void setItemLimit(int items);         // 0: every item
    void setTextFile(const QString& path);  // real text for the logit metrics ("" = none)
    // Starts a new evaluation (false when busy or there is nothing to run); finished() follows.
    bool run();
    bool isRunning() const;
    bool waitForFinished(int timeoutMs);  // tests, screenshots

    // The project's stored evalsuite runs (reloaded); checked ones are compared by compareStored().
    void refreshStoredRuns();
    int storedRunCount() const;
    QList<qint64> storedRunIds() const;  // in the list's order (oldest first)
    bool checkStoredRun(qint64 runId, bool checked = true);
    void setAllowMixedSettings(bool allow);
    bool compareStored();

    const EvalSuiteResult& result() const { return m_result; }
    bool hasResult() const { return !m_result.runs.empty(); }
    QString statusText() const;
    void showTab(const QString& name);  // "Success", "Flips", "Logits", "Cost", "Runs", "Checklist"
    // The tables as shown (tests): rows of cells.
    QList<QStringList> tableRows(const QString& tab) const;
    // The flip in row `row`: asks for the Generate view at its prompt (generateRequested).
    bool openFlip(int row);
    BarChart* successChart() const { return m_chart; }
    // Writes every table as CSV into `folder`; the paths written.
    QStringList exportCsv(const QString& folder);

signals:
    // The Generate view at `prompt` (the item's user message), with the model that flipped.
    void generateRequested(const QString& prompt, const QString& modelPath);
    void statusMessage(const QString& text, int timeoutMs);
    void finished();

private:
    void showResult();
    void updateButtons();
    void updateSuiteSummary();
    void setStatus(const QString& text);

    QString m_project, m_referencePath;
    bool m_generates = false;
    WrappingLabel* m_intro = nullptr;
    QLabel* m_reference = nullptr;
    QLineEdit* m_suite = nullptr;
    QLabel* m_suiteSummary = nullptr;
    QSpinBox* m_maxTokens = nullptr;
    QSpinBox* m_limit = nullptr;
    QSpinBox* m_samples = nullptr;
    QLineEdit* m_text = nullptr;
    QListWidget* m_models = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_stop = nullptr;
    QListWidget* m_stored = nullptr;
    QCheckBox* m_allowMixed = nullptr;
    QPushButton* m_compare = nullptr;
    QPushButton* m_export = nullptr;
    QLabel* m_status = nullptr;
    QTabWidget* m_tabs = nullptr;
    BarChart* m_chart = nullptr;
    QTableWidget* m_rates = nullptr;
    QTableWidget* m_flips = nullptr;
    QTableWidget* m_logits = nullptr;
    QLabel* m_predictors = nullptr;
    QTableWidget* m_cost = nullptr;
    QTableWidget* m_runs = nullptr;
    QTreeWidget* m_checklist = nullptr;
    JobRunner* m_runner = nullptr;
    EvalSuiteResult m_result;
};

}  // namespace ql
