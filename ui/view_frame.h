// SPDX-License-Identifier: GPL-3.0-or-later
// Holds one view of the main window inside its scroll area and tells the scroll area the view's
// minimum size only. A QScrollArea sizes a widget whose layout has height-for-width (a wrapping
// label, a wrapping tool bar) to its preferred height, not its minimum one: such a view scrolled
// at 1280x800 although it fitted, its plot cut off below the fold. Through this frame the view
// fills the viewport and scrolls only below its minimum size.
#pragma once

#include <QWidget>

namespace ql {

class ViewFrame : public QWidget {
    Q_OBJECT
public:
    // Takes `view` as its child (Qt parent ownership).
    explicit ViewFrame(QWidget* view, QWidget* parent = nullptr);

    QWidget* view() const { return m_view; }
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* m_view;
};

}  // namespace ql
