// SPDX-License-Identifier: GPL-3.0-or-later
// One element code drawn as coloured bit cells grouped into fields (sign / exponent / mantissa,
// integer value, codebook index), with the decoding of the current code field by field.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "engine/core/format_catalog.h"
#include "ui/element_code.h"

namespace ql {

class BitLayoutWidget : public QWidget {
    Q_OBJECT
public:
    explicit BitLayoutWidget(QWidget* parent = nullptr);

    // Shows the fields of `format`'s element and clears the code.
    void setFormat(const FormatInfo& format);
    // Fills the cells with `code`; `context` says where it came from ("largest value",
    // "sample element #3 × scale 0.25").
    void setCode(const ElementCode& code, const QString& context = QString());
    void clearCode();

    QVector<int> fieldWidths() const;
    QStringList fieldNames() const;
    QString shownBits() const { return m_code.valid ? m_code.bits : QString(); }
    QString resultText() const { return m_code.valid ? m_code.result : QString(); }
    QString caption() const { return m_caption; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QColor roleColour(BitField::Role role) const;

    QVector<BitField> m_fields;
    QString m_caption;
    ElementCode m_code;
    QString m_context;
};

}  // namespace ql
