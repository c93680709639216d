// SPDX-License-Identifier: GPL-3.0-or-later
// CSV fields for the plots' "Copy data as CSV": RFC 4180 quoting for text (layer names and labels
// may hold commas or quotes) and a round-trippable number format.
#pragma once

#include <QLocale>
#include <QString>

#include <cmath>

namespace ql {

// `text` as one CSV field: quoted, with inner quotes doubled, when it holds , " or a line break.
inline QString csvField(const QString& text) {
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')) &&
        !text.contains(QLatin1Char('\r')))
        return text;
    QString quoted = text;
    quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

// 9 significant digits: enough to read a float32 back exactly, short for round values ("0.12").
// NaN is written "nan" (what numpy and pandas read), infinities "inf" / "-inf".
inline QString csvNumber(double value) {
    if (std::isnan(value)) return QStringLiteral("nan");
    if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(value, 'g', 9);
}

// The shortest text that reads back as the same double ("0.1", "1e-07"), for values shown or
// exported exactly as given (metrics, bar values); "nan", "inf" and "-inf" as in csvNumber.
inline QString shortestNumber(double value) {
    if (std::isnan(value)) return QStringLiteral("nan");
    if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

}  // namespace ql
