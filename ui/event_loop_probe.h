// SPDX-License-Identifier: GPL-3.0-or-later
// How promptly the GUI thread's event loop serves a periodic timer: the gap between consecutive
// ticks is the interval plus how late the loop got to it. A gap of seconds means something
// blocked the GUI thread (a forward pass, a file hash, a SQLite read). Used by the stall check
// (tests/ui/latency) and the latency benchmark (bench/gui, docs/BENCHMARKS.md).
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <cstddef>
#include <vector>

namespace ql {

class EventLoopProbe : public QObject {
    Q_OBJECT
public:
    // `intervalMs`: the timer's period (Qt::PreciseTimer).
    explicit EventLoopProbe(int intervalMs = 5, QObject* parent = nullptr);

    void start();  // clears earlier gaps
    void stop();

    struct Summary {
        std::size_t ticks = 0;
        double medianMs = 0, p99Ms = 0, maxMs = 0;  // of the gaps; 0 without ticks
    };
    // Gaps between consecutive ticks in milliseconds; the first tick's gap counts from start().
    const std::vector<double>& gapsMs() const { return m_gaps; }
    Summary summary() const;

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    double m_last = 0;
    std::vector<double> m_gaps;
};

}  // namespace ql
