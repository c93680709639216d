// SPDX-License-Identifier: GPL-3.0-or-later
// A layout that places its items left to right and wraps onto the next row when the width runs
// out, like words in a paragraph (after Qt's "Flow Layout" example). Plot tool bars use it so that
// a narrow plot shows its controls on two rows instead of clipping their labels.
#pragma once

#include <QLayout>
#include <QList>
#include <QStyle>

#include <initializer_list>

namespace ql {

class FlowLayout : public QLayout {
public:
    // Spacing -1: the style's spacing between widgets.
    explicit FlowLayout(QWidget* parent = nullptr, int horizontalSpacing = -1, int verticalSpacing = -1);
    ~FlowLayout() override;

    void addItem(QLayoutItem* item) override;
    // Adds `widgets` as one item that never wraps inside (a label stays with its control): a new
    // box, child of `parent`, with them in a row `spacing` pixels apart. Returns the box (hide it
    // to hide the group).
    QWidget* addGroup(QWidget* parent, std::initializer_list<QWidget*> widgets, int spacing = 6);
    int count() const override { return static_cast<int>(m_items.size()); }
    QLayoutItem* itemAt(int index) const override;
    QLayoutItem* takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    // The widest item's width (everything else wraps), and the height of the rows at the width
    // the layout was last given: a parent that ignores height-for-width (a QSplitter, a scroll
    // area's splitter-filled view) still reserves the wrapped rows instead of squeezing them
    // over the widgets below.
    QSize minimumSize() const override;
    QSize sizeHint() const override;     // one row
    void setGeometry(const QRect& rect) override;

    // Rows the items take at `width` (tests).
    int rowCount(int width) const;

private:
    int arrange(const QRect& rect, bool apply, int* rows = nullptr) const;
    int spacing(Qt::Orientation o) const;

    QList<QLayoutItem*> m_items;
    int m_hSpacing, m_vSpacing;
    int m_wrappedHeight = 0;  // heightForWidth of the last setGeometry's width
};

}  // namespace ql
