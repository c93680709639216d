// SPDX-License-Identifier: GPL-3.0-or-later
// Watches a project file from a thread of its own: the list of runs with their key metrics, and
// the new points of the metric series of the runs being shown. The project file is the one record
// of every run (docs/PROJECT_FILES.md): a run this GUI started, one quantlab-cli is writing in
// another process, or one finished long ago are all read the same way. Polling SQLite in WAL mode
// never blocks the writer; doing it off the GUI thread keeps even a 1 M-point first load from
// stalling the event loop.
#pragma once

#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QVector>

#include <vector>

class QThread;

namespace ql {

// One run as the explorer and the compare view show it.
struct RunRow {
    qint64 id = 0;
    QString kind, name, status, message, host;
    QString model, recipe;          // names
    QString recipeJson;
    QString configJson;
    double createdAt = 0, startedAt = 0, endedAt = 0;  // Unix seconds (0 = not yet)
    bool liveWriter = false;        // status running and its writer alive
    qint64 writerPid = 0;
    qint64 lastStep = 0;            // the largest step of any series
    QHash<QString, double> finals;  // the last value of every metric series
};

struct SeriesChunk {
    qint64 runId = 0;
    QString name;
    std::vector<double> steps, values;  // new points, steps ascending
    bool reset = false;                 // true: these replace what was shown (first load)
};

class ProjectWatcher : public QObject {
    Q_OBJECT
public:
    explicit ProjectWatcher(QObject* parent = nullptr);
    ~ProjectWatcher() override;

    // Starts watching `path` (empty: stop); a runsChanged() follows promptly.
    void setProject(const QString& path);
    QString project() const { return m_path; }
    // The runs whose series stream through seriesArrived(); each newly watched run first gets
    // its whole series (reset = true), then only new points.
    void setWatchedRuns(const QList<qint64>& runIds);
    // Sends the whole series of these watched runs again (reset = true).
    void reloadRuns(const QList<qint64>& runIds);
    // Poll now instead of at the next tick (after this GUI wrote something).
    void refresh();
    // Milliseconds between polls (default 250).
    void setInterval(int ms);

signals:
    void runsChanged(const QVector<ql::RunRow>& runs);
    void seriesArrived(const QVector<ql::SeriesChunk>& chunks);
    // Opening or reading failed (file removed, not a project …): the text says which and why.
    void error(const QString& message);

private:
    class Poller;
    QThread* m_thread = nullptr;
    Poller* m_poller = nullptr;  // lives in m_thread
    QString m_path;
};

}  // namespace ql

Q_DECLARE_METATYPE(ql::RunRow)
Q_DECLARE_METATYPE(ql::SeriesChunk)
