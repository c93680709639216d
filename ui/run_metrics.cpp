// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/run_metrics.h"

#include <QObject>

#include <cmath>

namespace ql {

const QVector<RunMetric>& compareMetrics() {
    static const QVector<RunMetric> metrics = {
        {QStringLiteral("eval/exact_match"), QObject::tr("Exact match"), true, true},
        {QStringLiteral("eval/accuracy"), QObject::tr("Accuracy"), true, true},
        {QStringLiteral("eval/ppl"), QObject::tr("Perplexity"), false, false},
        {QStringLiteral("eval/kl"), QObject::tr("KL to FP"), false, false},
        {QStringLiteral("eval/agreement"), QObject::tr("Top-1 agreement"), true, true},
        {QStringLiteral("eval/loss"), QObject::tr("Eval loss"), false, false},
        // Sentence encoders (docs/DATA.md "Encoder metrics").
        {QStringLiteral("eval/cosine_mean"), QObject::tr("Cosine to FP"), true, false},
        {QStringLiteral("eval/cosine_p5"), QObject::tr("Cosine p5"), true, false},
        {QStringLiteral("eval/spearman"), QObject::tr("Spearman"), true, false},
        {QStringLiteral("eval/teacher_spearman"), QObject::tr("FP Spearman"), true, false},
        {QStringLiteral("model/bytes"), QObject::tr("Size (MB)"), false, false},
        {QStringLiteral("model/bits_per_parameter"), QObject::tr("Bits/param"), false, false},
        {QStringLiteral("time"), QObject::tr("Time (s)"), false, false},
    };
    return metrics;
}

std::optional<double> runMetricValue(const RunRow& run, const RunMetric& m) {
    if (m.key == QLatin1String("time")) {
        if (run.finals.contains(QStringLiteral("time/seconds"))) return run.finals.value(QStringLiteral("time/seconds"));
        if (run.startedAt > 0 && run.endedAt >= run.startedAt) return run.endedAt - run.startedAt;
        return std::nullopt;
    }
    auto it = run.finals.constFind(m.key);
    if (it == run.finals.cend()) return std::nullopt;
    if (m.key == QLatin1String("model/bytes")) return it.value() / 1e6;
    return it.value();
}

QString formatMetric(const RunMetric& m, double v) {
    if (!std::isfinite(v)) return QString::number(v);
    if (m.percent) return QStringLiteral("%1 %").arg(100.0 * v, 0, 'f', 2);
    if (std::fabs(v) >= 100) return QString::number(v, 'f', 1);
    return QString::number(v, 'g', 4);
}

}  // namespace ql
