// SPDX-License-Identifier: GPL-3.0-or-later
// DataExtent (plots/data_extent.h): the reset-zoom range of HistogramPlot and NumberLinePlot.
#include "plots/data_extent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ql {
namespace {

TEST(DataExtent, PadsTheSpanOfTheFiniteValuesTaken) {
    DataExtent e;
    for (double v : {2.0, -6.0, std::nan(""), std::numeric_limits<double>::infinity(), 4.0}) e.take(v);
    EXPECT_FALSE(e.empty());
    const auto [lower, upper] = e.padded(0.05);  // span [-6, 4], 0.5 on each side
    EXPECT_DOUBLE_EQ(lower, -6.5);
    EXPECT_DOUBLE_EQ(upper, 4.5);
}

TEST(DataExtent, NothingShowsMinusOneToOneAndOneValueIsWidenedByOne) {
    DataExtent none;
    none.take(-std::numeric_limits<double>::infinity());
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(none.padded(0.0), std::make_pair(-1.0, 1.0));
    DataExtent one;
    one.take(3.0);
    one.take(3.0);
    EXPECT_EQ(one.padded(0.25), std::make_pair(1.5, 4.5));  // [2, 4] padded by 0.5
}

}  // namespace
}  // namespace ql
