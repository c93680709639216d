// SPDX-License-Identifier: GPL-3.0-or-later
// The bit fields of a format's element code and the decoding of one code, field by field, for
// teaching: "0 1111 110 → + × 2^(15−7) × (1 + 6/8) = 448". Pure functions over the engine's
// FormatInfo; no widgets.
#pragma once

#include <QString>
#include <QVector>

#include "engine/core/format_catalog.h"

namespace ql {

struct BitField {
    enum class Role { Sign, Exponent, Mantissa, Integer, Index };
    QString name;  // "sign", "exponent", "mantissa", "value", "index"
    int width = 0;
    Role role = Role::Mantissa;
};

// The fields of one element code, most significant first. GGUF's unsigned element codes
// (layout names "UINT4", "UINT5") are one unsigned field with an implicit offset.
QVector<BitField> elementFields(const FormatInfo& format);

struct DecodedField {
    QString bits;     // "1111"
    QString meaning;  // "15 − 7 = 8"
};

struct ElementCode {
    bool valid = false;
    QString bits;                   // fields separated by spaces, "0 1111 110"
    QVector<DecodedField> fields;   // one per elementFields() entry
    double value = 0;               // the element value (before any scale); NaN for NaN codes
    QString result;                 // "+2^8 × 1.75 = 448"
    QString error;                  // why the code could not be decoded
};

// Decodes a code given as binary digits (spaces and other separators are ignored).
ElementCode decodeElementBits(const FormatInfo& format, const QString& bits);
// The code of an element value (one of format.element_values) decoded as above.
ElementCode encodeElementValue(const FormatInfo& format, double value);

// Shortest text that round-trips a float element value: "448", "0.001953125", "-1.5".
QString formatValue(double value);

}  // namespace ql
