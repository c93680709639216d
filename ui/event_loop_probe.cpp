// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/event_loop_probe.h"

#include <algorithm>

namespace ql {

EventLoopProbe::EventLoopProbe(int intervalMs, QObject* parent) : QObject(parent) {
    m_timer.setTimerType(Qt::PreciseTimer);
    m_timer.setInterval(intervalMs);
    connect(&m_timer, &QTimer::timeout, this, [this] {
        const double now = static_cast<double>(m_clock.nsecsElapsed()) / 1e6;
        m_gaps.push_back(now - m_last);
        m_last = now;
    });
}

void EventLoopProbe::start() {
    m_gaps.clear();
    m_last = 0;
    m_clock.start();
    m_timer.start();
}

void EventLoopProbe::stop() { m_timer.stop(); }

EventLoopProbe::Summary EventLoopProbe::summary() const {
    Summary s;
    s.ticks = m_gaps.size();
    if (m_gaps.empty()) return s;
    std::vector<double> sorted = m_gaps;
    std::sort(sorted.begin(), sorted.end());
    s.medianMs = sorted[sorted.size() / 2];
    s.p99Ms = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
    s.maxMs = sorted.back();
    return s;
}

}  // namespace ql
