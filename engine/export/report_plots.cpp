// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/report_plots.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "engine/core/errors.h"

namespace ql {
namespace {

constexpr double kLeft = 70, kRight = 20, kTop = 34, kBottom = 52;

struct Canvas {
    std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface{nullptr, cairo_surface_destroy};
    std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr{nullptr, cairo_destroy};
    int w, h;
    Canvas(PlotSize s) : w(s.width), h(s.height) {
        surface.reset(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h));
        cr.reset(cairo_create(surface.get()));
        cairo_set_source_rgb(cr.get(), 1, 1, 1);
        cairo_paint(cr.get());
        cairo_select_font_face(cr.get(), "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        cairo_set_font_size(cr.get(), 11);
    }
    cairo_t* c() { return cr.get(); }
    void text(const std::string& s, double x, double y, double align_x, double align_y, double angle = 0) {
        cairo_text_extents_t e;
        cairo_text_extents(c(), s.c_str(), &e);
        cairo_save(c());
        cairo_translate(c(), x, y);
        cairo_rotate(c(), angle);
        cairo_move_to(c(), -e.width * align_x - e.x_bearing, e.height * align_y - (e.height + e.y_bearing));
        cairo_show_text(c(), s.c_str());
        cairo_restore(c());
    }
    std::string png() {
        std::string out;
        cairo_surface_flush(surface.get());
        const cairo_status_t st = cairo_surface_write_to_png_stream(
            surface.get(),
            [](void* closure, const unsigned char* data, unsigned int n) {
                static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), n);
                return CAIRO_STATUS_SUCCESS;
            },
            &out);
        if (st != CAIRO_STATUS_SUCCESS) throw UserError(std::string("report plot: ") + cairo_status_to_string(st));
        return out;
    }
};

std::string tick_label(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", std::fabs(v) < 1e-12 ? 0.0 : v);
    return b;
}

// Frame, title, axis labels and y ticks; returns the y mapping range (lo, hi).
void frame(Canvas& cv, const std::string& title, const std::string& x_label, const std::string& y_label, double ylo,
           double yhi) {
    cairo_t* c = cv.c();
    const double pw = cv.w - kLeft - kRight, ph = cv.h - kTop - kBottom;
    cairo_set_source_rgb(c, 0, 0, 0);
    cairo_set_font_size(c, 13);
    cv.text(title, cv.w / 2.0, 8, 0.5, 1);
    cairo_set_font_size(c, 11);
    cv.text(x_label, kLeft + pw / 2, cv.h - 6, 0.5, 0);
    cv.text(y_label, 6, kTop + ph / 2, 0.5, 1, -M_PI / 2);
    for (double t : nice_ticks(ylo, yhi)) {
        const double y = kTop + ph * (1 - (t - ylo) / (yhi - ylo));
        cairo_set_source_rgb(c, 0.88, 0.88, 0.88);
        cairo_move_to(c, kLeft, y);
        cairo_line_to(c, kLeft + pw, y);
        cairo_stroke(c);
        cairo_set_source_rgb(c, 0, 0, 0);
        cairo_move_to(c, kLeft - 4, y);
        cairo_line_to(c, kLeft, y);
        cairo_stroke(c);
        cv.text(tick_label(t), kLeft - 6, y, 1, 0.5);
    }
    cairo_set_source_rgb(c, 0, 0, 0);
    cairo_set_line_width(c, 1);
    cairo_rectangle(c, kLeft, kTop, pw, ph);
    cairo_stroke(c);
}

void range_of(const std::vector<double>& v, double& lo, double& hi) {
    lo = INFINITY;
    hi = -INFINITY;
    for (double x : v)
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (lo == hi) lo -= 0.5 + std::fabs(lo) * 0.05, hi += 0.5 + std::fabs(hi) * 0.05;
    const std::vector<double> t = nice_ticks(lo, hi);
    lo = std::min(lo, t.front());
    hi = std::max(hi, t.back());
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
    const double raw = (hi - lo) / std::max(1, target);
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    double step = p;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= raw) {
            step = m * p;
            break;
        }
    std::vector<double> t;
    for (double v = std::floor(lo / step) * step; v <= hi + step * 0.5 && t.size() < 50; v += step) t.push_back(v);
    return t;
}

std::string line_plot_png(const std::string& title, const std::string& x_label, const std::string& y_label,
                          const std::vector<double>& x, const std::vector<double>& y, PlotSize size) {
    Canvas cv(size);
    cairo_t* c = cv.c();
    double xlo, xhi, ylo, yhi;
    range_of(x, xlo, xhi);
    range_of(y, ylo, yhi);
    frame(cv, title, x_label, y_label, ylo, yhi);
    const double pw = cv.w - kLeft - kRight, ph = cv.h - kTop - kBottom;
    auto px = [&](double v) { return kLeft + pw * (v - xlo) / (xhi - xlo); };
    auto py = [&](double v) { return kTop + ph * (1 - (v - ylo) / (yhi - ylo)); };
    for (double t : nice_ticks(xlo, xhi)) {
        if (t < xlo || t > xhi) continue;
        cairo_move_to(c, px(t), kTop + ph);
        cairo_line_to(c, px(t), kTop + ph + 4);
        cairo_stroke(c);
        cv.text(tick_label(t), px(t), kTop + ph + 6, 0.5, 1);
    }
    cairo_set_source_rgb(c, 0.12, 0.40, 0.75);
    cairo_set_line_width(c, 1.6);
    bool pen = false;
    const size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
            pen = false;
            continue;
        }
        if (pen)
            cairo_line_to(c, px(x[i]), py(y[i]));
        else
            cairo_move_to(c, px(x[i]), py(y[i]));
        pen = true;
        if (n == 1) cairo_arc(c, px(x[i]), py(y[i]), 2.5, 0, 2 * M_PI);
    }
    cairo_stroke(c);
    return cv.png();
}

std::string bar_chart_png(const std::string& title, const std::string& y_label, const std::vector<std::string>& labels,
                          const std::vector<double>& values, PlotSize size) {
    Canvas cv(size);
    cairo_t* c = cv.c();
    double lo, hi;
    std::vector<double> with_zero = values;
    with_zero.push_back(0.0);
    range_of(with_zero, lo, hi);
    frame(cv, title, "layer", y_label, lo, hi);
    const double pw = cv.w - kLeft - kRight, ph = cv.h - kTop - kBottom;
    auto py = [&](double v) { return kTop + ph * (1 - (v - lo) / (hi - lo)); };
    const size_t n = values.size();
    const double slot = n ? pw / static_cast<double>(n) : pw;
    for (size_t i = 0; i < n; ++i) {
        const double x0 = kLeft + slot * static_cast<double>(i);
        if (std::isfinite(values[i])) {
            cairo_set_source_rgb(c, 0.12, 0.40, 0.75);
            const double a = py(0.0), b = py(values[i]);
            cairo_rectangle(c, x0 + slot * 0.15, std::min(a, b), slot * 0.7, std::fabs(a - b));
            cairo_fill(c);
        }
        cairo_set_source_rgb(c, 0, 0, 0);
        if (i < labels.size() && slot >= 9) {
            cairo_set_font_size(c, std::min(10.0, slot * 0.8));
            cv.text(std::to_string(i), x0 + slot / 2, kTop + ph + 4, 0.5, 1);
        }
    }
    return cv.png();
}

std::string base64_encode(const std::string& in) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
        out += k[v >> 18];
        out += k[(v >> 12) & 63];
        out += k[(v >> 6) & 63];
        out += k[v & 63];
    }
    if (i < in.size()) {
        uint32_t v = uint8_t(in[i]) << 16;
        if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
        out += k[v >> 18];
        out += k[(v >> 12) & 63];
        out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

}  // namespace ql
