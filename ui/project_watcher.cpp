// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/project_watcher.h"

#include <QThread>
#include <QTimer>

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "projects/project_file.h"

namespace ql {

// Everything here runs on the watcher's thread; it owns the read-only connection.
class ProjectWatcher::Poller : public QObject {
    Q_OBJECT
public:
    Poller() {
        m_timer = new QTimer(this);
        m_timer->setInterval(250);
        connect(m_timer, &QTimer::timeout, this, &Poller::poll);
    }

    void setProject(const QString& path) {
        m_file.reset();
        m_path = path;
        m_runsFingerprint.clear();
        m_series.clear();
        m_finals.clear();
        m_lastError.clear();
        if (path.isEmpty()) {
            m_timer->stop();
            emit runsChanged({});
            return;
        }
        m_timer->start();
        poll();
    }
    void setWatched(const QList<qint64>& ids) {
        std::set<qint64> now(ids.begin(), ids.end());
        for (auto it = m_series.begin(); it != m_series.end();)
            it = now.count(it->first) ? std::next(it) : m_series.erase(it);
        for (qint64 id : now) m_series.try_emplace(id);
        poll();
    }
    void reload(const QList<qint64>& ids) {
        for (qint64 id : ids) {
            auto it = m_series.find(id);
            if (it != m_series.end()) it->second.clear();  // every series counts as new: sent whole
        }
        poll();
    }
    void setInterval(int ms) { m_timer->setInterval(ms); }

    void poll() {
        if (m_path.isEmpty()) return;
        try {
            if (!m_file) m_file = std::make_unique<projects::ProjectFile>(
                             projects::ProjectFile::open(m_path.toStdString(), projects::OpenMode::ReadOnly));
            pollRuns();
            pollSeries();
            m_lastError.clear();
        } catch (const std::exception& e) {
            m_file.reset();  // reopen at the next tick: the file may come back (replaced, remounted)
            const QString message = QString::fromUtf8(e.what());
            if (message != m_lastError) emit error(message);
            m_lastError = message;
        }
    }

signals:
    void runsChanged(const QVector<ql::RunRow>& runs);
    void seriesArrived(const QVector<ql::SeriesChunk>& chunks);
    void error(const QString& message);

private:
    void pollRuns() {
        const std::vector<projects::RunRecord> runs = m_file->runs();
        QVector<RunRow> rows;
        QString fingerprint;
        std::map<int64_t, std::string> modelNames, recipeNames, recipeJson;
        for (const auto& m : m_file->models()) modelNames[m.id] = m.name;
        for (const auto& r : m_file->recipes()) {
            recipeNames[r.id] = r.name;
            recipeJson[r.id] = r.json;
        }
        for (const projects::RunRecord& r : runs) {
            RunRow row;
            row.id = r.id;
            row.kind = QString::fromStdString(r.kind);
            row.name = QString::fromStdString(r.name);
            row.status = QString::fromStdString(std::string(projects::to_string(r.status)));
            row.message = QString::fromStdString(r.message);
            row.host = QString::fromStdString(r.host);
            if (r.model_id) row.model = QString::fromStdString(modelNames[*r.model_id]);
            if (r.recipe_id) {
                row.recipe = QString::fromStdString(recipeNames[*r.recipe_id]);
                row.recipeJson = QString::fromStdString(recipeJson[*r.recipe_id]);
            }
            row.configJson = QString::fromStdString(r.config_json);
            row.createdAt = r.created_at;
            row.startedAt = r.started_at.value_or(0);
            row.endedAt = r.ended_at.value_or(0);
            row.liveWriter = r.status == projects::RunStatus::Running && r.writer_alive;
            row.writerPid = r.writer_pid.value_or(0);
            // Final values: re-read only the series whose summary moved since the last poll.
            auto& finals = m_finals[r.id];
            for (const projects::SeriesSummary& s : m_file->metric_summaries(r.id)) {
                row.lastStep = std::max<qint64>(row.lastStep, s.last_step);
                auto& cached = finals[s.name];
                if (cached.points != s.points || cached.lastStep != s.last_step) {
                    const projects::MetricSeries tail = m_file->load_series(r.id, s.name, s.last_step - 1);
                    cached.points = s.points;
                    cached.lastStep = s.last_step;
                    cached.value = tail.values.empty() ? std::nan("") : tail.values.back();
                }
                row.finals.insert(QString::fromStdString(s.name), cached.value);
            }
            fingerprint += QStringLiteral("%1|%2|%3|%4|%5|%6;").arg(row.id).arg(row.status).arg(row.lastStep)
                               .arg(row.finals.size()).arg(row.liveWriter).arg(row.message);
            for (auto it = row.finals.cbegin(); it != row.finals.cend(); ++it)
                fingerprint += QString::number(it.value(), 'g', 10);
            rows.push_back(std::move(row));
        }
        if (fingerprint != m_runsFingerprint) {
            m_runsFingerprint = fingerprint;
            emit runsChanged(rows);
        }
    }

    void pollSeries() {
        QVector<SeriesChunk> chunks;
        for (auto& [runId, seen] : m_series) {
            for (const projects::SeriesSummary& s : m_file->metric_summaries(runId)) {
                auto it = seen.find(s.name);
                const bool first = it == seen.end();
                if (!first && it->second >= s.last_step) continue;
                const projects::MetricSeries series =
                    first ? m_file->load_series(runId, s.name) : m_file->load_series(runId, s.name, it->second);
                if (series.empty() && !first) continue;
                SeriesChunk c;
                c.runId = runId;
                c.name = QString::fromStdString(s.name);
                c.reset = first;
                c.steps.reserve(series.size());
                for (int64_t step : series.steps) c.steps.push_back(static_cast<double>(step));
                c.values = series.values;
                seen[s.name] = series.empty() ? (first ? -1 : it->second) : series.steps.back();
                chunks.push_back(std::move(c));
            }
        }
        if (!chunks.isEmpty()) emit seriesArrived(chunks);
    }

    struct Final {
        int64_t points = -1, lastStep = 0;
        double value = 0;
    };
    QTimer* m_timer = nullptr;
    QString m_path;
    std::unique_ptr<projects::ProjectFile> m_file;
    QString m_runsFingerprint;
    QString m_lastError;
    std::map<qint64, std::map<std::string, int64_t>> m_series;  // run -> series -> last step shown
    std::map<int64_t, std::map<std::string, Final>> m_finals;
};

ProjectWatcher::ProjectWatcher(QObject* parent) : QObject(parent) {
    qRegisterMetaType<QVector<ql::RunRow>>();
    qRegisterMetaType<QVector<ql::SeriesChunk>>();
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("ProjectWatcher"));
    m_poller = new Poller;
    m_poller->moveToThread(m_thread);
    connect(m_thread, &QThread::finished, m_poller, &QObject::deleteLater);
    connect(m_poller, &Poller::runsChanged, this, &ProjectWatcher::runsChanged, Qt::QueuedConnection);
    connect(m_poller, &Poller::seriesArrived, this, &ProjectWatcher::seriesArrived, Qt::QueuedConnection);
    connect(m_poller, &Poller::error, this, &ProjectWatcher::error, Qt::QueuedConnection);
    m_thread->start();
}

ProjectWatcher::~ProjectWatcher() {
    m_thread->quit();
    m_thread->wait();
}

void ProjectWatcher::setProject(const QString& path) {
    m_path = path;
    QMetaObject::invokeMethod(m_poller, [p = m_poller, path] { p->setProject(path); }, Qt::QueuedConnection);
}

void ProjectWatcher::setWatchedRuns(const QList<qint64>& runIds) {
    QMetaObject::invokeMethod(m_poller, [p = m_poller, runIds] { p->setWatched(runIds); }, Qt::QueuedConnection);
}

void ProjectWatcher::reloadRuns(const QList<qint64>& runIds) {
    QMetaObject::invokeMethod(m_poller, [p = m_poller, runIds] { p->reload(runIds); }, Qt::QueuedConnection);
}

void ProjectWatcher::refresh() {
    QMetaObject::invokeMethod(m_poller, [p = m_poller] { p->poll(); }, Qt::QueuedConnection);
}

void ProjectWatcher::setInterval(int ms) {
    QMetaObject::invokeMethod(m_poller, [p = m_poller, ms] { p->setInterval(ms); }, Qt::QueuedConnection);
}

}  // namespace ql

#include "project_watcher.moc"
