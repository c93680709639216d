// SPDX-License-Identifier: GPL-3.0-or-later
// A metric time series handed to the export report (from a project run or a checkpoint's own
// reports). Plain C++ types only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

// A metric time series (from a project run) for the report's curves.
struct ExportSeries {
    std::string name;
    std::vector<int64_t> steps;
    std::vector<double> values;
};

}  // namespace ql
