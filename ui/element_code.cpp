// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/element_code.h"

#include <cmath>
#include <limits>

namespace ql {
namespace {

// Unsigned integer codes (GGUF Q4_0/Q4_1/Q5_0 store q + code_offset).
bool isUnsignedLayout(const ElementLayout& layout) { return layout.is_integer && layout.sign_bits == 0; }

// IEEE-style formats reserve the all-ones exponent for Inf/NaN; E4M3 (fn) only the all-ones
// code; E2M1, E3M2 and E2M3 have no special codes (FORMATS.md).
bool hasIeeeSpecials(const ElementLayout& layout) {
    const QString n = QString::fromStdString(layout.name);
    return n == "E5M2" || n == "FP16" || n == "BF16" || n == "FP32";
}

QString minus(double v) { return v < 0 ? QStringLiteral("\u2212") : QString(); }

// Integer levels are evenly spaced; MXINT8's are k/64, the others plain integers.
double integerStep(const FormatInfo& format) {
    const auto& v = format.element_values;
    if (v.size() >= 2) return static_cast<double>(v[1]) - static_cast<double>(v[0]);
    return 1.0;
}

// 2⁻⁶ rather than 2^-6: the decoding reads like the formula in a paper.
QString pow2(int e) {
    static const QString superscripts[] = {
        QStringLiteral("\u2070"), QStringLiteral("\u00b9"), QStringLiteral("\u00b2"), QStringLiteral("\u00b3"),
        QStringLiteral("\u2074"), QStringLiteral("\u2075"), QStringLiteral("\u2076"), QStringLiteral("\u2077"),
        QStringLiteral("\u2078"), QStringLiteral("\u2079")};
    QString s = QStringLiteral("2");
    if (e < 0) s += QStringLiteral("\u207b");
    for (QChar digit : QString::number(std::abs(e))) s += superscripts[digit.digitValue()];
    return s;
}

}  // namespace

namespace {
// For reading, not parsing: a real minus sign lines up with the other typeset formulas.
QString displayValue(double value) { return formatValue(value).replace(QLatin1Char('-'), QChar(0x2212)); }
}  // namespace

QString formatValue(double value) {
    if (std::isnan(value)) return QStringLiteral("NaN");
    if (std::isinf(value)) return value < 0 ? QStringLiteral("\u2212Inf") : QStringLiteral("Inf");
    for (int precision = 6; precision <= 9; ++precision) {
        const QString s = QString::number(value, 'g', precision);
        if (static_cast<float>(s.toDouble()) == static_cast<float>(value)) return s;
    }
    return QString::number(value, 'g', 9);
}

QVector<BitField> elementFields(const FormatInfo& format) {
    const ElementLayout& e = format.element;
    QVector<BitField> fields;
    if (e.is_codebook) {
        fields.push_back({QStringLiteral("index"), format.element_bits, BitField::Role::Index});
    } else if (e.is_integer && isUnsignedLayout(e)) {
        fields.push_back({QStringLiteral("unsigned q"), format.element_bits, BitField::Role::Integer});
    } else if (e.is_integer) {
        fields.push_back({QStringLiteral("sign"), 1, BitField::Role::Sign});
        fields.push_back({QStringLiteral("value"), format.element_bits - 1, BitField::Role::Integer});
    } else {
        if (e.sign_bits > 0) fields.push_back({QStringLiteral("sign"), e.sign_bits, BitField::Role::Sign});
        fields.push_back({QStringLiteral("exponent"), e.exponent_bits, BitField::Role::Exponent});
        fields.push_back({QStringLiteral("mantissa"), e.mantissa_bits, BitField::Role::Mantissa});
    }
    return fields;
}

ElementCode decodeElementBits(const FormatInfo& format, const QString& text) {
    ElementCode out;
    QString bits;
    for (QChar c : text)
        if (c == QLatin1Char('0') || c == QLatin1Char('1')) bits += c;
    const QVector<BitField> fields = elementFields(format);
    int width = 0;
    for (const auto& f : fields) width += f.width;
    if (bits.size() != width || width == 0 || width > 32) {
        out.error = QStringLiteral("expected %1 bits, got '%2'").arg(width).arg(text);
        return out;
    }
    QStringList parts;
    QVector<quint32> fieldValues;
    int pos = 0;
    for (const auto& f : fields) {
        const QString b = bits.mid(pos, f.width);
        pos += f.width;
        parts << b;
        fieldValues << b.toUInt(nullptr, 2);
        out.fields.push_back({b, QString()});
    }
    out.bits = parts.join(QLatin1Char(' '));
    const ElementLayout& e = format.element;

    if (e.is_codebook) {
        const quint32 index = fieldValues[0];
        if (index >= format.element_values.size()) {
            out.error = QStringLiteral("index %1 outside the codebook").arg(index);
            return out;
        }
        out.value = format.element_values[index];
        out.fields[0].meaning = QStringLiteral("index %1").arg(index);
        out.result = QStringLiteral("%1[%2] = %3").arg(QString::fromStdString(format.title)).arg(index).arg(displayValue(out.value));
        out.valid = true;
        return out;
    }
    if (e.is_integer) {
        const double step = integerStep(format);
        long long k = 0;
        if (isUnsignedLayout(e)) {
            const long long q = fieldValues[0];
            const long long offset = format.element_values.empty() ? 0 : std::llround(-format.element_values.front());
            k = q - offset;
            out.fields[0].meaning = QStringLiteral("q = %1").arg(q);
            out.result = offset != 0 ? QStringLiteral("q \u2212 %1 = %2").arg(offset).arg(minus(k) + QString::number(std::llabs(k)))
                                     : QStringLiteral("q = %1").arg(k);
        } else {
            // Two's complement: the sign bit weighs -2^(b-1).
            const int b = format.element_bits;
            const long long signWeight = fieldValues[0] ? -(1LL << (b - 1)) : 0;
            const long long rest = fieldValues[1];
            k = signWeight + rest;
            out.fields[0].meaning = fieldValues[0] ? QStringLiteral("\u22122^%1 = \u2212%2").arg(b - 1).arg(1LL << (b - 1))
                                                   : QStringLiteral("0");
            out.fields[1].meaning = QStringLiteral("+%1").arg(rest);
            out.result = fieldValues[0] ? QStringLiteral("\u2212%1 + %2 = %3").arg(1LL << (b - 1)).arg(rest).arg(minus(k) + QString::number(std::llabs(k)))
                                        : QString::number(k);
        }
        out.value = static_cast<double>(k) * step;
        if (step != 1.0) {
            const long long denominator = std::llround(1.0 / step);
            out.result = QStringLiteral("k = %1;  k / %2 = %3").arg(out.result).arg(denominator).arg(displayValue(out.value));
        }
        out.valid = true;
        return out;
    }

    // Floats: sign, biased exponent, mantissa with an implicit leading 1 (0 for subnormals).
    const int signIndex = e.sign_bits > 0 ? 0 : -1;
    const int expIndex = signIndex + 1;
    const int manIndex = expIndex + 1;
    const bool negative = signIndex >= 0 && fieldValues[signIndex] != 0;
    const quint32 expField = fieldValues[expIndex];
    const quint32 manField = fieldValues[manIndex];
    const int M = e.mantissa_bits;
    const quint32 expAllOnes = (1u << e.exponent_bits) - 1;
    const quint32 manAllOnes = (1u << M) - 1;
    const double denominator = std::ldexp(1.0, M);
    if (signIndex >= 0) out.fields[signIndex].meaning = negative ? QStringLiteral("\u2212") : QStringLiteral("+");
    if (hasIeeeSpecials(e) && expField == expAllOnes) {
        out.value = manField == 0 ? (negative ? -INFINITY : INFINITY) : std::numeric_limits<double>::quiet_NaN();
        out.fields[expIndex].meaning = QStringLiteral("all ones");
        out.fields[manIndex].meaning = manField == 0 ? QStringLiteral("zero: Inf") : QStringLiteral("non-zero: NaN");
        out.result = displayValue(out.value);
        out.valid = true;
        return out;
    }
    if (QString::fromStdString(e.name) == "E4M3" && expField == expAllOnes && manField == manAllOnes) {
        out.value = std::numeric_limits<double>::quiet_NaN();
        out.fields[expIndex].meaning = QStringLiteral("all ones");
        out.fields[manIndex].meaning = QStringLiteral("all ones: NaN");
        out.result = QStringLiteral("NaN (E4M3 has no Inf)");
        out.valid = true;
        return out;
    }
    const bool subnormal = expField == 0;
    const int exponent = subnormal ? 1 - e.bias : static_cast<int>(expField) - e.bias;
    const double significand = (subnormal ? 0.0 : 1.0) + manField / denominator;
    out.value = (negative ? -1.0 : 1.0) * std::ldexp(significand, exponent);
    if (subnormal)
        out.fields[expIndex].meaning = QStringLiteral("0 → subnormal: 1 \u2212 %1 = %2").arg(e.bias).arg(minus(exponent) + QString::number(std::abs(exponent)));
    else
        out.fields[expIndex].meaning =
            QStringLiteral("%1 \u2212 %2 = %3").arg(expField).arg(e.bias).arg(minus(exponent) + QString::number(std::abs(exponent)));
    out.fields[manIndex].meaning = QStringLiteral("%1 + %2/%3 = %4")
                                       .arg(subnormal ? 0 : 1)
                                       .arg(manField)
                                       .arg(static_cast<qulonglong>(denominator))
                                       .arg(formatValue(significand));
    out.result = QStringLiteral("%1%2 \u00d7 %3 = %4")
                     .arg(negative ? QStringLiteral("\u2212") : QStringLiteral("+"), pow2(exponent),
                          formatValue(significand), displayValue(out.value));
    out.valid = true;
    return out;
}

ElementCode encodeElementValue(const FormatInfo& format, double value) {
    const QVector<BitField> fields = elementFields(format);
    const ElementLayout& e = format.element;
    auto binary = [](unsigned long long v, int width) {
        return QString::number(v, 2).rightJustified(width, QLatin1Char('0')).right(width);
    };
    QString bits;
    if (e.is_codebook) {
        int index = -1;
        for (size_t i = 0; i < format.element_values.size(); ++i)
            if (static_cast<double>(format.element_values[i]) == value) index = static_cast<int>(i);
        if (index < 0) {
            ElementCode out;
            out.error = QStringLiteral("%1 is not in the codebook").arg(formatValue(value));
            return out;
        }
        bits = binary(static_cast<unsigned>(index), format.element_bits);
    } else if (e.is_integer) {
        const long long k = std::llround(value / integerStep(format));
        if (isUnsignedLayout(e)) {
            const long long offset = format.element_values.empty() ? 0 : std::llround(-format.element_values.front());
            bits = binary(static_cast<unsigned long long>(k + offset), format.element_bits);
        } else {
            bits = binary(static_cast<unsigned long long>(k) & ((1ULL << format.element_bits) - 1), format.element_bits);
        }
    } else {
        const bool negative = std::signbit(value);
        const double a = std::fabs(value);
        const int M = e.mantissa_bits;
        unsigned long long expField = 0, manField = 0;
        if (a != 0) {
            const int minNormalExp = 1 - e.bias;
            int k = std::ilogb(a);
            if (k < minNormalExp) {
                manField = static_cast<unsigned long long>(std::llround(std::ldexp(a, M - minNormalExp)));
            } else {
                expField = static_cast<unsigned long long>(k + e.bias);
                manField = static_cast<unsigned long long>(std::llround((std::ldexp(a, -k) - 1.0) * std::ldexp(1.0, M)));
            }
        }
        if (e.sign_bits > 0) bits += negative ? QLatin1Char('1') : QLatin1Char('0');
        bits += binary(expField, e.exponent_bits);
        bits += binary(manField, M);
    }
    ElementCode out = decodeElementBits(format, bits);
    if (out.valid && !(out.value == value || (std::isnan(out.value) && std::isnan(value)))) {
        out.valid = false;
        out.error = QStringLiteral("%1 is not representable").arg(formatValue(value));
    }
    return out;
}

}  // namespace ql
