// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/job_runner.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QThread>
#include <QTimer>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <mutex>

#include "engine/core/engine_runtime.h"

namespace ql {

struct JobRunner::Shared {
    std::mutex mutex;
    bool hasProgress = false;
    int64_t done = 0, total = 0;
    std::string phase;
    std::deque<std::pair<int, std::string>> logs;
    std::deque<std::pair<std::string, std::string>> artifacts;
    std::optional<int64_t> runId;
    bool finished = false;
    Outcome outcome = Outcome::Completed;
    std::string message;
};

// Called on the worker thread; only stores. Progress overwrites (only the latest matters),
// log lines and artifacts queue.
class JobRunner::QueuedSink final : public JobSink {
public:
    explicit QueuedSink(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
    void progress(int64_t done, int64_t total, const std::string& phase) override {
        std::lock_guard lock(shared_->mutex);
        shared_->hasProgress = true;
        shared_->done = done;
        shared_->total = total;
        shared_->phase = phase;
    }
    void log(LogLevel level, const std::string& text) override {
        std::lock_guard lock(shared_->mutex);
        // A job that logs without pause must not grow the queue without bound between drains.
        if (shared_->logs.size() < 10000) shared_->logs.emplace_back(static_cast<int>(level), text);
    }
    void artifact(const std::string& kind, const std::string& path) override {
        std::lock_guard lock(shared_->mutex);
        shared_->artifacts.emplace_back(kind, path);
    }

private:
    std::shared_ptr<Shared> shared_;
};

JobRunner::JobRunner(QObject* parent) : QObject(parent) {
    m_timer = new QTimer(this);
    m_timer->setInterval(33);  // ≤ 30 updates a second reach the widgets
    connect(m_timer, &QTimer::timeout, this, &JobRunner::drain);
}

JobRunner::~JobRunner() {
    if (m_worker) {
        m_cancel.cancel();
        m_worker->join();
    }
}

bool JobRunner::start(const QString& title, Job job, const std::optional<QString>& project,
                      const projects::ProjectRunInfo& info, std::function<void()> onCompleted) {
    if (m_worker) return false;
    m_onCompleted = std::move(onCompleted);
    m_shared = std::make_shared<Shared>();
    m_cancel.reset();
    m_progress.reset();
    m_clock.start();
    m_title = title;
    m_runId = 0;
    std::optional<std::string> projectPath;
    if (project) projectPath = project->toStdString();
    auto shared = m_shared;
    const CancellationToken* cancel = &m_cancel;
    m_worker = std::make_unique<std::thread>([this, shared, cancel, job = std::move(job), projectPath, info] {
        // The GUI thread shares the cores with the job: a lower priority for the worker (and the
        // OpenMP threads it starts, which inherit it) keeps the event loop responsive on 2 cores.
        setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
        prepare_engine_worker_thread();
        QueuedSink sink(shared);
        Outcome outcome = Outcome::Completed;
        std::string message;
        try {
            projects::run_recorded(projectPath, info, sink, [&](JobSink& s) { job(s, *cancel); },
                                   "paused or cancelled from the GUI", [&](int64_t id) {
                                       std::lock_guard lock(shared->mutex);
                                       shared->runId = id;
                                   });
        } catch (const JobCancelled&) {
            outcome = Outcome::Cancelled;
            message = "cancelled";
        } catch (const std::exception& e) {
            outcome = Outcome::Failed;
            message = e.what();
        } catch (...) {
            outcome = Outcome::Failed;
            message = "unknown error";
        }
        {
            std::lock_guard lock(shared->mutex);
            shared->finished = true;
            shared->outcome = outcome;
            shared->message = message;
        }
        QMetaObject::invokeMethod(this, &JobRunner::onWorkerDone, Qt::QueuedConnection);
    });
    m_timer->start();
    emit started(title);
    return true;
}

void JobRunner::cancel() { m_cancel.cancel(); }

void JobRunner::drain() {
    if (!m_shared) return;
    bool hasProgress = false;
    int64_t done = 0, total = 0;
    std::string phase;
    std::deque<std::pair<int, std::string>> logs;
    std::deque<std::pair<std::string, std::string>> artifacts;
    std::optional<int64_t> runId;
    {
        std::lock_guard lock(m_shared->mutex);
        hasProgress = m_shared->hasProgress;
        m_shared->hasProgress = false;
        done = m_shared->done;
        total = m_shared->total;
        phase = m_shared->phase;
        logs.swap(m_shared->logs);
        artifacts.swap(m_shared->artifacts);
        runId = m_shared->runId;
        m_shared->runId.reset();
    }
    if (runId) {
        m_runId = *runId;
        emit runCreated(m_runId);
    }
    if (hasProgress) {
        m_progress.update(done, total, phase, m_clock.elapsed() / 1000.0);
        emit progressChanged();
    }
    for (const auto& [level, text] : logs) emit logMessage(level, QString::fromStdString(text));
    for (const auto& [kind, path] : artifacts) emit artifactProduced(QString::fromStdString(kind), QString::fromStdString(path));
}

void JobRunner::onWorkerDone() {
    if (!m_worker) return;
    m_worker->join();
    m_worker.reset();
    m_timer->stop();
    drain();
    Outcome outcome;
    QString message;
    {
        std::lock_guard lock(m_shared->mutex);
        outcome = m_shared->outcome;
        message = QString::fromStdString(m_shared->message);
    }
    std::function<void()> onCompleted = std::move(m_onCompleted);
    m_onCompleted = nullptr;
    if (outcome == Outcome::Completed && onCompleted) {
        try {
            onCompleted();
        } catch (const std::exception& e) {
            outcome = Outcome::Failed;
            message = QString::fromUtf8(e.what());
        }
    }
    emit finished(outcome, message);
}

bool JobRunner::waitForFinished(int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    while (m_worker && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    return !m_worker;
}

}  // namespace ql
