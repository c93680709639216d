// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/view_frame.h"

#include <QEvent>
#include <QResizeEvent>

namespace ql {

ViewFrame::ViewFrame(QWidget* view, QWidget* parent) : QWidget(parent), m_view(view) {
    setObjectName(view->objectName() + QStringLiteral("-frame"));
    view->setParent(this);
    view->installEventFilter(this);
}

QSize ViewFrame::minimumSizeHint() const { return m_view->minimumSizeHint().expandedTo(m_view->minimumSize()); }

QSize ViewFrame::sizeHint() const { return minimumSizeHint(); }

void ViewFrame::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    m_view->setGeometry(rect());
}

bool ViewFrame::eventFilter(QObject* watched, QEvent* event) {
    // The view's layout changed (rows wrapped, a label grew): its minimum may have changed too.
    if (watched == m_view && event->type() == QEvent::LayoutRequest) updateGeometry();
    return QWidget::eventFilter(watched, event);
}

}  // namespace ql
