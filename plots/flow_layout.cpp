// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/flow_layout.h"

#include <QHBoxLayout>
#include <QWidget>

#include <algorithm>

namespace ql {

FlowLayout::FlowLayout(QWidget* parent, int horizontalSpacing, int verticalSpacing)
    : QLayout(parent), m_hSpacing(horizontalSpacing), m_vSpacing(verticalSpacing) {}

FlowLayout::~FlowLayout() {
    while (QLayoutItem* item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem* item) { m_items.append(item); }

QWidget* FlowLayout::addGroup(QWidget* parent, std::initializer_list<QWidget*> widgets, int spacing) {
    auto* box = new QWidget(parent);
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(spacing);
    for (QWidget* w : widgets) {
        w->setParent(box);
        row->addWidget(w);
    }
    addWidget(box);
    return box;
}

QLayoutItem* FlowLayout::itemAt(int index) const { return index >= 0 && index < m_items.size() ? m_items.at(index) : nullptr; }

QLayoutItem* FlowLayout::takeAt(int index) { return index >= 0 && index < m_items.size() ? m_items.takeAt(index) : nullptr; }

int FlowLayout::heightForWidth(int width) const { return arrange(QRect(0, 0, width, 0), false); }

QSize FlowLayout::minimumSize() const {
    QSize size;
    for (const QLayoutItem* item : m_items) size = size.expandedTo(item->minimumSize());
    const QMargins m = contentsMargins();
    size += QSize(m.left() + m.right(), m.top() + m.bottom());
    return QSize(size.width(), std::max(size.height(), m_wrappedHeight));
}

QSize FlowLayout::sizeHint() const {
    int width = 0, height = 0, visible = 0;
    for (const QLayoutItem* item : m_items) {
        if (item->isEmpty()) continue;
        const QSize hint = item->sizeHint();
        width += hint.width();
        height = std::max(height, hint.height());
        ++visible;
    }
    const QMargins m = contentsMargins();
    return QSize(width + std::max(0, visible - 1) * spacing(Qt::Horizontal) + m.left() + m.right(),
                 height + m.top() + m.bottom());
}

void FlowLayout::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    const int height = arrange(rect, true);
    if (height != m_wrappedHeight) {
        // More or fewer rows than the minimum said: tell the parents (settles in one pass, as
        // the rows depend on the width only).
        m_wrappedHeight = height;
        invalidate();
    }
}

int FlowLayout::rowCount(int width) const {
    int rows = 0;
    arrange(QRect(0, 0, width, 0), false, &rows);
    return rows;
}

int FlowLayout::arrange(const QRect& rect, bool apply, int* rows) const {
    const QMargins m = contentsMargins();
    const QRect area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom());
    const int hs = spacing(Qt::Horizontal), vs = spacing(Qt::Vertical);
    int x = area.x(), y = area.y(), rowHeight = 0, rowsUsed = 0;
    // Items of one row share its height and are centred in it vertically.
    QList<QPair<QLayoutItem*, QPoint>> row;
    auto finishRow = [&] {
        if (apply)
            for (const auto& [item, at] : row) {
                const QSize s = item->sizeHint();
                item->setGeometry(QRect(QPoint(at.x(), at.y() + (rowHeight - s.height()) / 2), s));
            }
        row.clear();
    };
    for (QLayoutItem* item : m_items) {
        if (item->isEmpty()) continue;
        const QSize hint = item->sizeHint();
        if (!row.isEmpty() && x + hint.width() > area.right() + 1) {
            finishRow();
            x = area.x();
            y += rowHeight + vs;
            rowHeight = 0;
        }
        if (row.isEmpty()) ++rowsUsed;
        row.append({item, QPoint(x, y)});
        x += hint.width() + hs;
        rowHeight = std::max(rowHeight, hint.height());
    }
    finishRow();
    if (rows) *rows = rowsUsed;
    return y + rowHeight - rect.y() + m.bottom();
}

int FlowLayout::spacing(Qt::Orientation o) const {
    const int own = o == Qt::Horizontal ? m_hSpacing : m_vSpacing;
    if (own >= 0) return own;
    const QWidget* w = parentWidget();
    if (!w) return 6;
    const int metric = w->style()->pixelMetric(
        o == Qt::Horizontal ? QStyle::PM_LayoutHorizontalSpacing : QStyle::PM_LayoutVerticalSpacing, nullptr, w);
    return metric >= 0 ? metric : 6;  // styles that space per control pair answer -1
}

}  // namespace ql
