// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/palette_quantizer.h"

#include <QHash>
#include <QVector>

#include <algorithm>
#include <array>
#include <climits>

namespace ql {
namespace {

struct Entry {
    QRgb rgb;
    quint32 count;
};

int channel(QRgb c, int k) { return k == 0 ? qRed(c) : (k == 1 ? qGreen(c) : qBlue(c)); }

// A box of the median cut: a range of `entries` and its pixel-weighted spread.
struct Box {
    int begin = 0;
    int end = 0;
    double error = 0;  // weighted variance summed over channels: how much splitting it gains
    int widest = 0;    // the channel with the largest weighted variance
};

Box measure(const QVector<Entry>& entries, int begin, int end) {
    Box b{begin, end, 0, 0};
    std::array<double, 3> sum{}, sumSq{};
    double weight = 0;
    for (int i = begin; i < end; ++i) {
        const double w = entries[i].count;
        weight += w;
        for (int k = 0; k < 3; ++k) {
            const double v = channel(entries[i].rgb, k);
            sum[k] += w * v;
            sumSq[k] += w * v * v;
        }
    }
    double best = -1;
    for (int k = 0; k < 3; ++k) {
        const double variance = sumSq[k] - sum[k] * sum[k] / std::max(weight, 1.0);
        b.error += variance;
        if (variance > best) {
            best = variance;
            b.widest = k;
        }
    }
    if (end - begin < 2) b.error = 0;
    return b;
}

QRgb average(const QVector<Entry>& entries, const Box& b) {
    std::array<double, 3> sum{};
    double weight = 0;
    for (int i = b.begin; i < b.end; ++i) {
        weight += entries[i].count;
        for (int k = 0; k < 3; ++k) sum[k] += double(entries[i].count) * channel(entries[i].rgb, k);
    }
    auto c = [&](int k) { return qBound(0, static_cast<int>(sum[k] / weight + 0.5), 255); };
    return qRgb(c(0), c(1), c(2));
}

}  // namespace

QImage quantizeToPalette(const QImage& image, int colours) {
    colours = qBound(2, colours, 256);
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    QHash<QRgb, quint32> histogram;
    for (int y = 0; y < rgb.height(); ++y) {
        const QRgb* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
        for (int x = 0; x < rgb.width(); ++x) ++histogram[line[x] | 0xff000000u];
    }
    QVector<Entry> entries;
    entries.reserve(histogram.size());
    for (auto it = histogram.cbegin(); it != histogram.cend(); ++it) entries.push_back({it.key(), it.value()});

    QVector<QRgb> palette;
    if (entries.size() <= colours) {
        for (const Entry& e : entries) palette.push_back(e.rgb);
    } else {
        QVector<Box> boxes{measure(entries, 0, static_cast<int>(entries.size()))};
        while (boxes.size() < colours) {
            const auto worst = std::max_element(boxes.begin(), boxes.end(),
                                                [](const Box& a, const Box& b) { return a.error < b.error; });
            if (worst->error <= 0) break;
            const Box box = *worst;
            const int k = box.widest;
            std::sort(entries.begin() + box.begin, entries.begin() + box.end,
                      [k](const Entry& a, const Entry& b) { return channel(a.rgb, k) < channel(b.rgb, k); });
            // Split at the pixel-weighted median, keeping both halves non-empty.
            quint64 total = 0, running = 0;
            for (int i = box.begin; i < box.end; ++i) total += entries[i].count;
            int split = box.begin + 1;
            for (int i = box.begin; i < box.end - 1; ++i) {
                running += entries[i].count;
                split = i + 1;
                if (running * 2 >= total) break;
            }
            *worst = measure(entries, box.begin, split);
            boxes.push_back(measure(entries, split, box.end));
        }
        for (const Box& b : boxes) palette.push_back(average(entries, b));
    }

    // Each distinct colour maps to its nearest palette entry.
    QHash<QRgb, uchar> index;
    index.reserve(static_cast<int>(entries.size()));
    for (const Entry& e : entries) {
        int best = 0, bestDistance = INT_MAX;
        for (int p = 0; p < palette.size(); ++p) {
            const int dr = qRed(e.rgb) - qRed(palette[p]), dg = qGreen(e.rgb) - qGreen(palette[p]),
                      db = qBlue(e.rgb) - qBlue(palette[p]);
            const int d = 3 * dr * dr + 4 * dg * dg + 2 * db * db;  // rough perceptual weights
            if (d < bestDistance) {
                bestDistance = d;
                best = p;
            }
        }
        index.insert(e.rgb, static_cast<uchar>(best));
    }
    QImage out(rgb.size(), QImage::Format_Indexed8);
    out.setColorTable(palette);
    for (int y = 0; y < rgb.height(); ++y) {
        const QRgb* src = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
        uchar* dst = out.scanLine(y);
        for (int x = 0; x < rgb.width(); ++x) dst[x] = index.value(src[x] | 0xff000000u);
    }
    out.setDotsPerMeterX(image.dotsPerMeterX());
    out.setDotsPerMeterY(image.dotsPerMeterY());
    return out;
}

}  // namespace ql
