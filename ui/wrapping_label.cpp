// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/wrapping_label.h"

#include <QResizeEvent>

namespace ql {

WrappingLabel::WrappingLabel(QWidget* parent) : QLabel(parent) {
    setWordWrap(true);
    setAlignment(Qt::AlignLeft | Qt::AlignTop);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
}

void WrappingLabel::setText(const QString& text) {
    QLabel::setText(text);
    fitHeight();
}

void WrappingLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    if (event->size().width() != event->oldSize().width()) fitHeight();
}

void WrappingLabel::fitHeight() {
    // The height depends on the width only, so this settles after one more layout pass.
    // QLabel::heightForWidth never answers less than minimumHeight(): measured with the old
    // minimum in place, the height could only grow (one narrow moment made it tall for good).
    const int old = minimumHeight();
    setMinimumHeight(0);
    const int needed = text().isEmpty() ? 0 : heightForWidth(width());
    setMinimumHeight(needed >= 0 ? needed : old);
}

}  // namespace ql
