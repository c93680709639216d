// SPDX-License-Identifier: GPL-3.0-or-later
// Start, pause, resume and cancel, and the progress of the running job: phase, a bar, done/total,
// throughput and time left. Pause stops a training run at its next step after saving a checkpoint
// (the run shows as cancelled = paused); Resume continues it from there in the same project run.
#pragma once

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace ql {

class JobRunner;

class RunControls : public QWidget {
    Q_OBJECT
public:
    explicit RunControls(JobRunner* runner, QWidget* parent = nullptr);

    QPushButton* startButton() const { return m_start; }
    QPushButton* pauseButton() const { return m_pause; }
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_bar; }
    QString progressText() const;
    // Whether the selected run can be resumed (paused or interrupted training run).
    void setResumable(bool on);
    void setStartEnabled(bool on, const QString& why = QString());

signals:
    void startRequested();
    void pauseRequested();
    void resumeRequested();
    void cancelRequested();

private:
    void updateProgress();
    void updateButtons();

    JobRunner* m_runner;
    QPushButton* m_start = nullptr;
    QPushButton* m_pause = nullptr;
    QPushButton* m_resume = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_bar = nullptr;
    QLabel* m_phase = nullptr;
    QLabel* m_eta = nullptr;
    bool m_resumable = false;
    bool m_startEnabled = true;
};

}  // namespace ql
