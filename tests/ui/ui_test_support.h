// SPDX-License-Identifier: GPL-3.0-or-later
// Shared set-up for the offscreen GUI tests: one QApplication per test process, settings in a
// temporary folder (never the developer's), and a main window built the way quantlab builds it.
#pragma once

#include <QString>
#include <QTemporaryDir>

#include <memory>

#include "ui/main_window.h"

namespace ql::test {

// The temporary folder holding this process's settings and any files a test writes.
QString scratchDir();

// A shown, exposed main window with the light theme and default settings, on view `view`
// (default: the Format Explorer, which most view tests drive; "" = the window's own choice).
std::unique_ptr<MainWindow> makeMainWindow(const QString& view = QStringLiteral("format-explorer"));

// Lets queued work (replots, layouts) run.
void settle(int ms = 20);

}  // namespace ql::test
