// SPDX-License-Identifier: GPL-3.0-or-later
// PNG plots for the export report, drawn with Cairo (the engine has no Qt): a line plot of one
// metric series and a bar chart of per-layer values, each with axes, ticks and labels. Returns
// the PNG file's bytes. Non-finite points are skipped (a NaN loss shows as a gap).
#pragma once

#include <string>
#include <vector>

namespace ql {

struct PlotSize {
    int width = 720, height = 320;  // pixels
};

std::string line_plot_png(const std::string& title, const std::string& x_label, const std::string& y_label,
                          const std::vector<double>& x, const std::vector<double>& y, PlotSize size = {});

std::string bar_chart_png(const std::string& title, const std::string& y_label, const std::vector<std::string>& labels,
                          const std::vector<double>& values, PlotSize size = {});

// Ticks at 1, 2 or 5 x 10^k covering [lo, hi] (about `target` of them), for tests and axes.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// RFC 4648 base64 (for data: URIs).
std::string base64_encode(const std::string& bytes);

}  // namespace ql
