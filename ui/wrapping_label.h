// SPDX-License-Identifier: GPL-3.0-or-later
// A word-wrapped label that always gets the height its text needs at its current width. A plain
// QLabel with word wrap is given the height of one line where its layout ignores height-for-width
// (inside a QSplitter, for one), and then draws its second line over the widget above it: the
// Format Explorer's sample-block summary ran over the chart's axis labels.
#pragma once

#include <QLabel>

namespace ql {

class WrappingLabel : public QLabel {
    Q_OBJECT
public:
    explicit WrappingLabel(QWidget* parent = nullptr);

    void setText(const QString& text);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitHeight();
};

}  // namespace ql
