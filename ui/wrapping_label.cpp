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
    const int needed = text().isEmpty() ? 0 : heightForWidth(width());
    if (needed >= 0 && needed != minimumHeight()) setMinimumHeight(needed);
}

}  // namespace ql
