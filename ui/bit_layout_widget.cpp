// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/bit_layout_widget.h"

#include <QEvent>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace ql {
namespace {

constexpr int kMargin = 10;
constexpr int kCellHeight = 34;
constexpr int kMaxCell = 40;
constexpr int kFieldRow = 18;

bool isDark(const QPalette& p) { return p.color(QPalette::Window).lightness() < 128; }

}  // namespace

BitLayoutWidget::BitLayoutWidget(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void BitLayoutWidget::setFormat(const FormatInfo& format) {
    m_fields = elementFields(format);
    const ElementLayout& e = format.element;
    QString kind;
    if (e.is_codebook)
        kind = tr("index into a %1-entry codebook").arg(format.element_values.size());
    else if (e.is_integer && e.sign_bits == 0)
        kind = tr("unsigned, stored with an offset of %1").arg(format.element_values.empty() ? 0 : -format.element_values.front());
    else if (e.is_integer)
        kind = tr("two's complement");
    else
        kind = tr("bias %1").arg(e.bias);
    m_caption = tr("%1 · %2 bits · %3").arg(QString::fromStdString(e.name)).arg(format.element_bits).arg(kind);
    clearCode();
    updateGeometry();
}

void BitLayoutWidget::setCode(const ElementCode& code, const QString& context) {
    m_code = code;
    m_context = context;
    update();
}

void BitLayoutWidget::clearCode() {
    m_code = ElementCode{};
    m_context.clear();
    update();
}

QVector<int> BitLayoutWidget::fieldWidths() const {
    QVector<int> w;
    for (const auto& f : m_fields) w << f.width;
    return w;
}

QStringList BitLayoutWidget::fieldNames() const {
    QStringList n;
    for (const auto& f : m_fields) n << f.name;
    return n;
}

QSize BitLayoutWidget::sizeHint() const {
    const int rows = std::max<int>(3, static_cast<int>(m_fields.size()));
    const int fm = fontMetrics().height();
    return {kMargin * 2 + 8 * kMaxCell, kMargin * 2 + fm * 2 + kCellHeight + fm + 8 + rows * kFieldRow + fm + 10};
}

QSize BitLayoutWidget::minimumSizeHint() const { return {260, sizeHint().height()}; }

QColor BitLayoutWidget::roleColour(BitField::Role role) const {
    const bool dark = isDark(palette());
    switch (role) {
    case BitField::Role::Sign: return dark ? QColor(0xff, 0x7b, 0x8a) : QColor(0xc9, 0x2a, 0x43);
    case BitField::Role::Exponent: return dark ? QColor(0x4f, 0xd1, 0xb5) : QColor(0x0f, 0x8a, 0x72);
    case BitField::Role::Mantissa: return dark ? QColor(0x7a, 0xb4, 0xff) : QColor(0x2b, 0x63, 0xd9);
    case BitField::Role::Integer: return dark ? QColor(0x7a, 0xb4, 0xff) : QColor(0x2b, 0x63, 0xd9);
    case BitField::Role::Index: return dark ? QColor(0xc3, 0x9b, 0xff) : QColor(0x7e, 0x4c, 0xc2);
    }
    return palette().color(QPalette::Text);
}

void BitLayoutWidget::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) update();
}

void BitLayoutWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::Text);
    QColor muted = text;
    muted.setAlphaF(0.6);
    const QFontMetrics fm = fontMetrics();
    int y = kMargin;

    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    p.drawText(QRect(kMargin, y, width() - 2 * kMargin, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, m_caption);
    y += fm.height() + 6;

    int totalBits = 0;
    for (const auto& f : m_fields) totalBits += f.width;
    if (totalBits == 0) return;
    // Cells shrink to fit (FP32 has 32) but never grow into a ribbon for 4-bit formats.
    const int gap = 5;  // between fields
    const int available = width() - 2 * kMargin - gap * (static_cast<int>(m_fields.size()) - 1);
    const int cell = std::clamp(available / totalBits, 12, kMaxCell);

    // Field names above their cells.
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    p.setFont(small);
    const QFontMetrics sfm(small);
    int x = kMargin;
    QVector<QRect> fieldRects;
    for (const auto& f : m_fields) {
        const QRect r(x, y + sfm.height() + 2, f.width * cell, kCellHeight);
        fieldRects << r;
        p.setPen(roleColour(f.role));
        const QString label = f.width > 1 ? QStringLiteral("%1 (%2)").arg(f.name).arg(f.width) : f.name;
        const QRect labelRect(r.x() - 20, y, r.width() + 40, sfm.height());
        p.drawText(labelRect, Qt::AlignHCenter | Qt::AlignBottom, sfm.elidedText(label, Qt::ElideRight, labelRect.width()));
        x += f.width * cell + gap;
    }
    y += sfm.height() + 2;

    // Bit cells, most significant first, with the bit index below.
    QString digits;
    for (QChar c : m_code.bits)
        if (c == QLatin1Char('0') || c == QLatin1Char('1')) digits += c;
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    mono.setPointSizeF(font().pointSizeF() * (cell >= 24 ? 1.25 : 1.0));
    mono.setBold(true);
    int bitIndex = totalBits - 1;
    int digitIndex = 0;
    for (int fi = 0; fi < m_fields.size(); ++fi) {
        const QColor c = roleColour(m_fields[fi].role);
        QColor fill = c;
        fill.setAlphaF(isDark(pal) ? 0.22 : 0.12);
        for (int b = 0; b < m_fields[fi].width; ++b) {
            const QRectF r(fieldRects[fi].x() + b * cell + 1, y + 1, cell - 2, kCellHeight - 2);
            QPainterPath path;
            path.addRoundedRect(r, 3, 3);
            p.fillPath(path, fill);
            p.setPen(QPen(c, 1.2));
            p.drawPath(path);
            if (digitIndex < digits.size()) {
                p.setFont(mono);
                p.setPen(text);
                p.drawText(r, Qt::AlignCenter, digits.mid(digitIndex, 1));
            }
            ++digitIndex;
            if (cell >= 16 || b == 0 || b == m_fields[fi].width - 1) {
                p.setFont(small);
                p.setPen(muted);
                p.drawText(QRectF(r.x() - 4, y + kCellHeight, r.width() + 8, sfm.height()), Qt::AlignHCenter | Qt::AlignTop,
                           QString::number(bitIndex));
            }
            --bitIndex;
        }
    }
    y += kCellHeight + sfm.height() + 8;

    // The decoding, one line per field, then the value.
    p.setFont(font());
    if (!m_code.valid) {
        p.setPen(muted);
        const QString hint = m_code.error.isEmpty()
                                 ? tr("Click a value on the number line or a row of the sample block to decode its bits.")
                                 : m_code.error;
        p.drawText(QRect(kMargin, y, width() - 2 * kMargin, 2 * fm.height()), Qt::AlignLeft | Qt::TextWordWrap, hint);
        return;
    }
    const int nameWidth = fm.horizontalAdvance(QStringLiteral("unsigned q")) + 16;
    const int bitsWidth = std::max(fm.horizontalAdvance(QStringLiteral("00000000")), fm.horizontalAdvance(QString(8, QLatin1Char('0')))) + 16;
    for (int fi = 0; fi < m_fields.size() && fi < m_code.fields.size(); ++fi) {
        const QColor c = roleColour(m_fields[fi].role);
        p.fillRect(QRect(kMargin, y + 5, 9, 9), c);
        p.setPen(text);
        p.drawText(QRect(kMargin + 16, y, nameWidth, kFieldRow), Qt::AlignLeft | Qt::AlignVCenter, m_fields[fi].name);
        QFont monoSmall = mono;
        monoSmall.setBold(false);
        monoSmall.setPointSizeF(font().pointSizeF());
        p.setFont(monoSmall);
        const QString fieldBits = m_code.fields[fi].bits.size() > 10 ? m_code.fields[fi].bits.left(8) + QStringLiteral("…")
                                                                     : m_code.fields[fi].bits;
        p.drawText(QRect(kMargin + 16 + nameWidth, y, bitsWidth + 40, kFieldRow), Qt::AlignLeft | Qt::AlignVCenter, fieldBits);
        p.setFont(font());
        const int meaningX = kMargin + 16 + nameWidth + bitsWidth + 40;
        const int meaningWidth = std::max(40, width() - kMargin - meaningX);
        p.drawText(QRect(meaningX, y, meaningWidth, kFieldRow), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(QStringLiteral("→ ") + m_code.fields[fi].meaning, Qt::ElideRight, meaningWidth));
        y += kFieldRow;
    }
    y += 4;
    p.setFont(bold);
    p.setPen(text);
    const QString result = tr("value = %1").arg(m_code.result);
    const QFontMetrics bfm(bold);
    p.drawText(QRect(kMargin, y, width() - 2 * kMargin, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
               bfm.elidedText(result, Qt::ElideRight, width() - 2 * kMargin));
    if (!m_context.isEmpty()) {
        p.setFont(font());
        p.setPen(muted);
        const int w = bfm.horizontalAdvance(result) + 16;
        p.drawText(QRect(kMargin + w, y, width() - 2 * kMargin - w, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(m_context, Qt::ElideRight, width() - 2 * kMargin - w));
    }
}

}  // namespace ql
