// SPDX-License-Identifier: GPL-3.0-or-later
// A divergence run of the project as the Layer Inspector's Depth and Tokens tabs show it: the
// stored report (projects/divergence_records.h) with the run's id and legend label.
#pragma once

#include <QString>

#include "engine/core/divergence_report.h"

namespace ql {

struct DivergenceRun {
    qint64 id = 0;
    QString label;  // "#12 MXFP4"
    DivergenceReport report;
};

}  // namespace ql
