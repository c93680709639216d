// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/log_panel.h"

#include <QDateTime>
#include <QPlainTextEdit>
#include <QVBoxLayout>

namespace ql {

LogPanel::LogPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_view = new QPlainTextEdit(this);
    m_view->setObjectName(QStringLiteral("logView"));
    m_view->setReadOnly(true);
    m_view->setMaximumBlockCount(5000);
    m_view->setFont(QFont(QStringLiteral("monospace")));
    layout->addWidget(m_view);
}

void LogPanel::append(int level, const QString& text) {
    static const char* names[] = {"debug", "info", "warning", "error"};
    const char* name = names[std::clamp(level, 0, 3)];
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"));
    const QString color = level >= 3 ? QStringLiteral("#d9534f") : level == 2 ? QStringLiteral("#c07b00") : QString();
    const QString line = QStringLiteral("%1 %2  %3").arg(stamp, QString::fromLatin1(name).leftJustified(7), text.toHtmlEscaped());
    m_view->appendHtml(color.isEmpty() ? QStringLiteral("<span>%1</span>").arg(line)
                                       : QStringLiteral("<span style='color:%1'>%2</span>").arg(color, line));
}

QString LogPanel::text() const { return m_view->toPlainText(); }
void LogPanel::clear() { m_view->clear(); }

}  // namespace ql
