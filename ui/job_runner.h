// SPDX-License-Identifier: GPL-3.0-or-later
// Runs one engine job at a time on a worker thread, so the GUI thread never waits for the engine.
// The job's reports (progress, log lines, artifacts) are buffered under a lock and handed to the
// GUI thread by a timer at most 30 times a second, however fast the job reports: the GUI sees the
// latest progress and every log line, coalesced. When a project is given the job is recorded as
// a run of it (projects/project_run_recorder.h), which is also where the live curves come from:
// the dashboard reads the project file, the same way it watches a run of quantlab-cli.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "engine/jobs/job.h"
#include "projects/project_run_recorder.h"
#include "ui/progress_estimate.h"

class QTimer;

namespace ql {

class JobRunner : public QObject {
    Q_OBJECT
public:
    using Job = std::function<void(JobSink& sink, const CancellationToken& cancel)>;
    enum class Outcome { Completed, Cancelled, Failed };
    Q_ENUM(Outcome)

    explicit JobRunner(QObject* parent = nullptr);
    ~JobRunner() override;  // cancels a running job and waits for it

    // Starts `job` unless one is running (returns false then). `title` names it in the progress
    // line. With `project`, the job is recorded as a run described by `info`. `onCompleted` runs
    // on the GUI thread when the job completes (not when it is cancelled or fails), before
    // finished() is emitted: where the caller picks up what the job produced.
    bool start(const QString& title, Job job, const std::optional<QString>& project = std::nullopt,
               const projects::ProjectRunInfo& info = {}, std::function<void()> onCompleted = {});
    // Asks the job to stop at its next check (≤ ~100 ms of work); finished() follows.
    void cancel();
    bool isRunning() const { return static_cast<bool>(m_worker); }
    QString title() const { return m_title; }
    // The project run the current (or last) job is recorded as; 0 when not recorded.
    qint64 runId() const { return m_runId; }
    const ProgressEstimate& progress() const { return m_progress; }
    // Blocks until the job has finished and its finished() was emitted (tests, shutdown).
    bool waitForFinished(int timeoutMs);

signals:
    void started(const QString& title);
    void runCreated(qint64 runId);
    // Coalesced: the latest progress of the current phase, with rate and ETA (ProgressEstimate).
    void progressChanged();
    void logMessage(int level, const QString& text);  // level: ql::LogLevel as int
    void artifactProduced(const QString& kind, const QString& path);
    void finished(ql::JobRunner::Outcome outcome, const QString& message);

private:
    struct Shared;  // the buffer the worker fills and the GUI thread drains
    class QueuedSink;

    void drain();
    void onWorkerDone();

    std::shared_ptr<Shared> m_shared;
    std::unique_ptr<std::thread> m_worker;
    CancellationToken m_cancel;
    QTimer* m_timer = nullptr;
    QElapsedTimer m_clock;
    ProgressEstimate m_progress;
    QString m_title;
    qint64 m_runId = 0;
    std::function<void()> m_onCompleted;
};

}  // namespace ql
