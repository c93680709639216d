// SPDX-License-Identifier: GPL-3.0-or-later
// The run-level metrics the explorer and the compare view show, which way is better for each, and
// how a value reads ("99.1 %", "0.0123", "4.50").
#pragma once

#include <QString>
#include <QVector>

#include <optional>

#include "ui/project_watcher.h"

namespace ql {

struct RunMetric {
    QString key;          // series name in the project ("eval/exact_match") or a derived key ("time")
    QString title;        // column header
    bool higherIsBetter = true;
    bool percent = false; // a 0..1 value shown as %
};

// accuracy (exact match / accuracy), ppl, KL, agreement, loss, encoders' cosine to FP and
// Spearman, size, bits/param, time.
const QVector<RunMetric>& compareMetrics();

// The value of `m` for `run`, if it has one.
std::optional<double> runMetricValue(const RunRow& run, const RunMetric& m);
QString formatMetric(const RunMetric& m, double value);

}  // namespace ql
