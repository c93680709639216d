// SPDX-License-Identifier: GPL-3.0-or-later
// Histogram of block scales on a log2 axis, for one or two scale sets side by side (e.g. the
// E4M3 block scales NVFP4 picks for a layer next to the E8M0 scales MXFP4 picks for the same
// layer). Bins are 1/8 binade wide: E4M3 has 3 mantissa bits, so each of its 8 values per binade
// lands in its own bin (log2(1 + j/8) lies in [j/8, (j+1)/8) for j = 0..7), while a power of two
// (E8M0) always lands in the first bin of its binade. The picture shows E8M0 scales snapping to
// powers of two while E4M3 scales fill the binades.
// Plain vectors in (scales as float values, the caller decides which scales); no format knowledge.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>

#include <array>
#include <map>
#include <vector>

#include "plots/plot_style.h"

class QCPBars;
class QCPBarsGroup;
class QCPTextElement;
class QCustomPlot;
class QCPLayoutGrid;
class QResizeEvent;
class QLabel;
class QMouseEvent;

namespace ql {

class ScaleHistogramPlot : public QWidget {
    Q_OBJECT
public:
    static constexpr int kSlotCount = 2;
    static constexpr int kBinsPerBinade = 8;

    // Global bin of a positive finite scale: floor(kBinsPerBinade · log2(scale)), with the binade
    // taken exactly from the exponent (frexp), so a power of two 2^k is bin 8k exactly.
    // Bin b covers log2(scale) in [b / 8, (b + 1) / 8).
    static int binIndex(double scale);

    explicit ScaleHistogramPlot(QWidget* parent = nullptr);

    void setTitle(const QString& title);
    QString title() const;
    void setExportName(const QString& name) { m_exportName = name; }

    // Scales of slot 0 or 1 (other slots are ignored). Zero, negative and non-finite scales have
    // no log2: they are counted and named in the legend, not drawn. Bars show the percentage of
    // the slot's drawable scales per bin, so sets with different block counts (16- vs 32-element
    // blocks) compare directly. An invalid `colour` picks the theme's primary (slot 0) or
    // secondary (slot 1) colour.
    void setScales(int slot, const std::vector<double>& scales, const QString& label, const QColor& colour = {});
    void clearScales(int slot);

    // Text under the plot (word-wrapped, hidden when empty); not part of exported images.
    void setCaption(const QString& text);
    QString caption() const;

    // Fits x to the occupied bins (half a binade either side) and y to the highest bar.
    void resetView();

    // Header "slot,label,log2_lo,log2_hi,count,percent": one row per occupied bin of each slot;
    // a row with empty log2 fields counts the scales that have no log2 (zero, negative, NaN, Inf).
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }

    // Read back from the plottable of `slot`: (log2 of the bin's lower edge, bar height in %) for
    // each bar drawn, ascending.
    std::vector<std::pair<double, double>> drawnBars(int slot) const;
    // Scales of `slot` without a log2 (zero, negative, NaN, Inf).
    int skippedCount(int slot) const;

    QSize minimumSizeHint() const override { return {260, 200}; }
    QSize sizeHint() const override { return {720, 380}; }

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Slot {
        std::map<int, int> bins;  // global bin -> number of scales
        int drawable = 0;
        int skipped = 0;
        QString label;
        QColor colour;  // as given; invalid = theme colour
    };

    void rebuild();
    void restyle();
    QColor slotColour(int slot) const;
    void showToolTip(QMouseEvent* event);
    void showContextMenu(const QPoint& pos);

    QCustomPlot* m_plot = nullptr;
    QLabel* m_caption = nullptr;
    QCPLayoutGrid* m_header = nullptr;
    QCPTextElement* m_title = nullptr;
    std::array<QCPBars*, kSlotCount> m_bars{};
    QCPBarsGroup* m_group = nullptr;
    std::array<Slot, kSlotCount> m_slots;
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("block-scales");
};

}  // namespace ql
