// SPDX-License-Identifier: GPL-3.0-or-later
// Waiting for background work in the GUI tests: models open, plans and runs finish on worker
// threads, and the test processes events until what it checks has arrived.
#pragma once

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QTest>

namespace ql::test {

// Waits (processing events) until `condition` holds or `timeoutMs` passes; returns whether it
// held. The timeout only bounds a hang: a test asserts the condition, never the time it took.
template <typename Condition>
bool waitFor(Condition condition, int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    while (!condition()) {
        if (deadline.hasExpired()) return false;
        QTest::qWait(20);
    }
    return true;
}

}  // namespace ql::test
