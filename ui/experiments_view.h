// SPDX-License-Identifier: GPL-3.0-or-later
// The Experiments view (docs/EXPERIMENTS.md "The Experiments view"): pick a built-in template or
// an experiment file, the model and the replicates; see the planned runs and the estimated
// time; Start makes them as runs of the open project on a worker thread (the same grid
// `quantlab-cli experiment run` makes: resumable, shared with other processes), Stop stops
// after the current run; progress shows runs done / running / queued with an ETA; the result
// (ExperimentResultPanel) updates after every run.
#pragma once

#include <QElapsedTimer>
#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

#include "engine/experiments/experiment_spec.h"
#include "ui/experiment_snapshot.h"
#include "ui/job_runner.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ql {

class ExperimentResultPanel;

class ExperimentsView : public QWidget {
    Q_OBJECT
public:
    explicit ExperimentsView(QWidget* parent = nullptr);
    ~ExperimentsView() override;  // stops a running experiment after its current run and waits

    // The project the runs go to (the workbench's open project).
    void setProject(const QString& path);
    QString project() const { return m_project; }

    // A template name or a JSON file; false (with lastError()) when it does not load.
    bool loadExperiment(const QString& templateOrFile);
    // Overrides of the loaded experiment (as quantlab-cli experiment run's options); 0 / "" = the file's.
    void setModel(const QString& model);
    void setReplicates(int replicates);
    void setSteps(int steps);
    void setEvalSamples(int samples);
    // Every run's data / the encoders' scored pairs ("" = the experiment's own).
    void setData(const QString& data);
    void setPairs(const QString& pairs);
    // What every run is scored on, whole ("" = the data's held-out tail), and the eval suite every
    // run's model also answers ("" = none, "default", or a JSONL file): --eval-data and --suite.
    void setEvalData(const QString& data);
    void setSuite(const QString& suite);

    bool start();   // false when nothing is loaded, no project is open, or it runs already
    void stop();    // after the current run
    bool isRunning() const;
    // Blocks until the experiment's job has ended and its result is shown (tests).
    bool waitForFinished(int timeoutMs);

    const experiments::ExperimentSpec* spec() const { return m_spec.get(); }
    int plannedRunCount() const { return static_cast<int>(m_plan.size()); }
    double estimatedSeconds() const;  // for the runs not done yet
    QTableWidget* runTable() const { return m_table; }
    ExperimentResultPanel* resultPanel() const { return m_result; }
    QString progressText() const;
    QString lastError() const { return m_lastError; }
    // Re-reads the project (in the background); snapshotLoaded() follows.
    void refresh();

signals:
    void snapshotLoaded();
    void experimentFinished(bool stopped, const QString& error);
    void statusMessage(const QString& text, int timeoutMs);

private:
    void reloadSpec();
    void rebuildTable();
    void updateStatuses();
    void updateProgress();
    void onSnapshot(const ExperimentSnapshot& snapshot);
    void onGridEvent(int kind, int index, qint64 runId, double seconds);
    void onFinished(JobRunner::Outcome outcome, const QString& message);
    void chooseFile();
    void chooseModelFolder();

    QComboBox* m_experiment = nullptr;
    QComboBox* m_model = nullptr;
    QSpinBox* m_replicates = nullptr;
    QSpinBox* m_steps = nullptr;
    QSpinBox* m_evalSamples = nullptr;
    QLineEdit* m_data = nullptr;
    QLineEdit* m_pairs = nullptr;
    QLineEdit* m_evalData = nullptr;
    QLineEdit* m_suite = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_claim = nullptr;
    QLabel* m_estimate = nullptr;
    QLabel* m_progress = nullptr;
    QProgressBar* m_bar = nullptr;
    QTableWidget* m_table = nullptr;
    ExperimentResultPanel* m_result = nullptr;
    JobRunner* m_runner = nullptr;

    QString m_project, m_source, m_lastError;
    QString m_defaultModel;  // the loaded file's model (not an override)
    std::shared_ptr<const experiments::ExperimentSpec> m_spec;
    std::vector<experiments::PlannedRun> m_plan;
    ExperimentSnapshot m_snapshot;
    std::vector<int> m_live;  // per planned run: 0 from the project, 1 running here, 2 finished here
    int m_current = -1;       // the planned run being made here
    double m_seconds = 0;     // spent on runs finished here
    int m_finishedHere = 0;
    bool m_stopping = false;
    int m_loads = 0;          // snapshot loads in flight
    QElapsedTimer m_runClock; // since the current run started
};

}  // namespace ql
