// SPDX-License-Identifier: GPL-3.0-or-later
// A demo model trained for a few steps into the tests' private XDG cache (ui_test_support sets
// XDG_CACHE_HOME), so the workbench opens "demo" as a user's first start does, in seconds.
#pragma once

#include <QString>

namespace ql::test {

// Builds the quick demo once per process; later calls return at once.
void ensureQuickDemo();

// Waits (processing events) until `condition` holds or `timeoutMs` passes; returns whether it held.
template <typename Condition>
bool waitFor(Condition condition, int timeoutMs);

}  // namespace ql::test

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QTest>

namespace ql::test {

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
