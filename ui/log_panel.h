// SPDX-License-Identifier: GPL-3.0-or-later
// The log: what jobs report (info, warnings, errors), time-stamped, errors in red. Bounded, so a
// chatty job cannot grow it without end.
#pragma once

#include <QWidget>

class QPlainTextEdit;

namespace ql {

class LogPanel : public QWidget {
    Q_OBJECT
public:
    explicit LogPanel(QWidget* parent = nullptr);
    // level: ql::LogLevel as int (0 debug, 1 info, 2 warning, 3 error)
    void append(int level, const QString& text);
    QString text() const;
    void clear();

private:
    QPlainTextEdit* m_view = nullptr;
};

}  // namespace ql
