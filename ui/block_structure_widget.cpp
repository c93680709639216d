// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/block_structure_widget.h"

#include <QEvent>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace ql {
namespace {

constexpr int kMargin = 10;
constexpr int kLevelHeight = 30;
constexpr int kLevelGap = 12;
constexpr int kCellHeight = 24;
constexpr int kByteHeight = 28;

QString bitsText(double bits) { return QString::number(bits, 'g', 4); }

bool isDark(const QPalette& p) { return p.color(QPalette::Window).lightness() < 128; }

QString formatMax(const FormatInfo& f) { return QString::number(f.element_max, 'g', 6); }

int mxEmax(const FormatInfo& f) {
    const QString e = QString::fromStdString(f.element.name);
    if (e == "E4M3") return 8;
    if (e == "E5M2") return 15;
    if (e == "E3M2") return 4;
    return f.element.is_integer ? 0 : 2;  // E2M3, E2M1: 2; INT8: 0 (FORMATS.md, OCP MX)
}

// llama.cpp's i-quants and ternary types (kernels/gguf_iquant_codec.h has the layouts).
bool isLatticeFormat(const std::string& n) {
    for (const char* name : {"gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq2_s", "gguf_iq3_xxs", "gguf_iq3_s", "gguf_iq1_s",
                             "gguf_iq1_m", "gguf_tq1_0", "gguf_tq2_0"})
        if (n == name) return true;
    return false;
}

void describeLatticeFormat(const FormatInfo& f, BlockDiagram& d) {
    const std::string& n = f.name;
    const bool ternary = n == "gguf_tq1_0" || n == "gguf_tq2_0";
    const int sub = ternary ? 256 : (n == "gguf_iq2_xs" || n == "gguf_iq2_s" || n == "gguf_iq1_m") ? 16 : 32;
    const int subBlocks = 256 / sub;
    d.blockSize = sub;
    if (ternary) {
        d.blockLabel = QObject::tr("block of 256 elements");
        d.scales.push_back({QObject::tr("FP16 scale d"), QObject::tr("amax of the block"), 1});
    } else {
        const bool iq1 = n == "gguf_iq1_s" || n == "gguf_iq1_m";
        d.blockLabel = QObject::tr("sub-block of %1 elements (%2 per super-block of 256); %3 values form one lattice point")
                           .arg(sub)
                           .arg(subBlocks)
                           .arg(n == "gguf_iq3_xxs" || n == "gguf_iq3_s" ? 4 : 8);
        d.scales.push_back({QObject::tr("%1-bit scale s").arg(iq1 ? 3 : 4),
                            iq1 ? QObject::tr("nearest((scale / d − 1) / 2): ×(2s + 1)") : QObject::tr("nearest((scale / d − 1) / 2)"), 1});
        d.scales.push_back({QObject::tr("FP16 super scale d"), QObject::tr("from the largest sub-block scale"), subBlocks});
    }
    if (n == "gguf_iq2_xxs")
        d.bytes = {{"d", 2, QObject::tr("FP16")},
                   {"qs", 64, QObject::tr("per 32: 4 × 8-bit point of 256, then 4 × 7 sign bits + 4-bit scale")}};
    else if (n == "gguf_iq2_xs")
        d.bytes = {{"d", 2, QObject::tr("FP16")}, {"qs", 64, QObject::tr("32 × (9-bit point of 512 | 7 sign bits << 9)")},
                   {"scales", 8, QObject::tr("16 × 4-bit scale")}};
    else if (n == "gguf_iq2_s")
        d.bytes = {{"d", 2, QObject::tr("FP16 (0.9875 d)")}, {"qs", 32, QObject::tr("32 × low 8 bits of the point")},
                   {"signs", 32, QObject::tr("32 × 8 sign bits")}, {"qh", 8, QObject::tr("32 × high 2 bits (points of 1024)")},
                   {"scales", 8, QObject::tr("16 × 4-bit scale")}};
    else if (n == "gguf_iq3_xxs")
        d.bytes = {{"d", 2, QObject::tr("FP16 (1.0125 d)")}, {"qs", 64, QObject::tr("64 × 8-bit point of 256 (4 values each)")},
                   {"signs+s", 32, QObject::tr("per 32: 4 × 7 sign bits + 4-bit scale")}};
    else if (n == "gguf_iq3_s")
        d.bytes = {{"d", 2, QObject::tr("FP16 (1.033 d)")}, {"qs", 64, QObject::tr("64 × low 8 bits of the point")},
                   {"qh", 8, QObject::tr("64 high bits (points of 512)")}, {"signs", 32, QObject::tr("256 sign bits")},
                   {"scales", 4, QObject::tr("8 × 4-bit scale")}};
    else if (n == "gguf_iq1_s")
        d.bytes = {{"d", 2, QObject::tr("FP16 (1.125 d)")}, {"qs", 32, QObject::tr("32 × low 8 bits of the point")},
                   {"qh", 16, QObject::tr("per 32: 4 × 3 high bits (points of 2048), 3-bit scale, shift sign")}};
    else if (n == "gguf_iq1_m")
        d.bytes = {{"qs", 32, QObject::tr("32 × low 8 bits of the point")},
                   {"qh", 16, QObject::tr("per 8: 3 high bits + shift sign")},
                   {"scales", 8, QObject::tr("16 × 3-bit scale; FP16 d in the top nibbles")}};
    else if (n == "gguf_tq1_0")
        d.bytes = {{"qs", 48, QObject::tr("240 trits, 5 per byte (base 3 × 256/243)")}, {"qh", 4, QObject::tr("16 trits, 4 per byte")},
                   {"d", 2, QObject::tr("FP16")}};
    else
        d.bytes = {{"qs", 64, QObject::tr("256 × 2-bit trit")}, {"d", 2, QObject::tr("FP16")}};
    int total = 0;
    for (const auto& field : d.bytes) total += field.bytes;
    d.storage = QObject::tr("%1 bytes per %2 of 256 → %3 bits/element")
                    .arg(total)
                    .arg(ternary ? QObject::tr("block") : QObject::tr("super-block"))
                    .arg(bitsText(total * 8.0 / 256));
}

}  // namespace

BlockDiagram describeBlockStructure(const FormatInfo& f, const QuantOptions& options) {
    BlockDiagram d;
    d.elementLabel = QString::fromStdString(f.element.name);
    d.elementBits = f.element_bits;
    d.blockSize = static_cast<int>(f.block_size);
    const int b = f.element_bits;
    const QString family = QString::fromStdString(f.family);

    if (family == "passthrough") {
        d.blockLabel = QObject::tr("every element stands alone");
        d.storage = QObject::tr("%1 bits per element, no scale").arg(b);
    } else if (family == "fp8") {
        const bool channel = options.granularity == "channel";
        d.blockSize = 0;
        d.blockLabel = channel ? QObject::tr("all elements of one output channel (row)") : QObject::tr("all elements of the tensor");
        d.scales.push_back({QObject::tr("FP32 scale"), QObject::tr("amax / %1").arg(formatMax(f)), 0});
        d.storage = QObject::tr("%1 bits per element + one FP32 scale per %2").arg(b).arg(channel ? QObject::tr("channel") : QObject::tr("tensor"));
    } else if (family == "nvfp4") {
        d.blockLabel = QObject::tr("block of %1 elements").arg(d.blockSize);
        d.scales.push_back({QObject::tr("E4M3 block scale s"), QObject::tr("block amax / (6·g)"), 1});
        d.scales.push_back({QObject::tr("FP32 tensor scale g"), QObject::tr("amax / (6·448)"), 0});
        d.storage = QObject::tr("%1 × %2 bit + 8 bit scale = %3 bit per block → %4 bits/element (+ 32 bit per tensor)")
                        .arg(d.blockSize).arg(b).arg(d.blockSize * b + 8).arg(bitsText((d.blockSize * b + 8.0) / d.blockSize));
    } else if (family == "mx") {
        d.blockLabel = QObject::tr("block of %1 elements").arg(d.blockSize);
        const bool rceil = options.mx_scale == "rceil";
        d.scales.push_back({QObject::tr("E8M0 shared scale X"),
                            rceil ? QObject::tr("2^ceil(log2(amax / %1))").arg(formatMax(f))
                                  : QObject::tr("2^(floor(log2 amax) − %1)").arg(mxEmax(f)),
                            1});
        d.storage = QObject::tr("%1 × %2 bit + 8 bit = %3 bit per block → %4 bits/element")
                        .arg(d.blockSize).arg(b).arg(d.blockSize * b + 8).arg(bitsText((d.blockSize * b + 8.0) / d.blockSize));
    } else if (family == "int") {
        const QString g = options.granularity.empty() ? QStringLiteral("group") : QString::fromStdString(options.granularity);
        const QString scale = options.asymmetric ? QObject::tr("FP32 scale + zero point") : QObject::tr("FP32 scale");
        const QString rule = options.asymmetric ? QObject::tr("(max − min) / %1").arg((1 << b) - 1)
                                                : QObject::tr("amax / %1").arg((1 << (b - 1)) - 1);
        if (g == "group") {
            const int group = options.group_size > 0 ? static_cast<int>(options.group_size) : static_cast<int>(f.default_group_size);
            d.blockSize = group;
            d.blockLabel = QObject::tr("group of %1 elements along the input dimension").arg(group);
            d.scales.push_back({scale, rule, 1});
            d.storage = QObject::tr("%1 × %2 bit + 32 bit scale%3 → %4 bits/element")
                            .arg(group).arg(b).arg(options.asymmetric ? QObject::tr(" + zero point") : QString())
                            .arg(bitsText(b + 32.0 / group));
        } else {
            d.blockSize = 0;
            d.blockLabel = g == "channel" ? QObject::tr("all elements of one output channel (row)") : QObject::tr("all elements of the tensor");
            d.scales.push_back({scale, rule, 0});
            d.storage = QObject::tr("%1 bits per element + one scale per %2").arg(b).arg(g);
        }
    } else if (family == "nf4") {
        d.blockLabel = QObject::tr("block of %1 consecutive elements (flattened)").arg(d.blockSize);
        if (options.double_quant) {
            d.scales.push_back({QObject::tr("8-bit absmax code"), QObject::tr("dynamic map of (absmax − offset)"), 1});
            d.scales.push_back({QObject::tr("FP32 code scale"), QObject::tr("max |absmax − offset| of 256 blocks"), 256});
            d.scales.push_back({QObject::tr("FP32 offset"), QObject::tr("mean(absmax)"), 0});
            d.storage = QObject::tr("64 × 4 bit + 8 bit + 32 bit per 256 blocks → %1 bits/element")
                            .arg(bitsText(4.0 + 8.0 / 64 + 32.0 / (64 * 256)));
        } else {
            d.scales.push_back({QObject::tr("FP32 absmax"), QObject::tr("max |x| of the block"), 1});
            d.storage = QObject::tr("64 × 4 bit + 32 bit absmax = 288 bit per block → 4.5 bits/element");
        }
    } else if (family == "gguf" && isLatticeFormat(f.name)) {
        describeLatticeFormat(f, d);
    } else if (family == "gguf" && (f.block_size == 256 || f.name == "gguf_iq4_nl")) {
        // K-quants and IQ4: sub-blocks with small integer scales under an fp16 super scale.
        const std::string& n = f.name;
        const bool withMin = n == "gguf_q2_k" || n == "gguf_q4_k" || n == "gguf_q5_k";
        const int sub = (n == "gguf_q2_k" || n == "gguf_q3_k" || n == "gguf_q6_k") ? 16 : 32;
        const int subBlocks = static_cast<int>(f.block_size) / sub;
        const int scaleBits = n == "gguf_q2_k" ? 4 : (n == "gguf_q6_k" ? 8 : 6);
        d.blockSize = sub;
        d.blockLabel = subBlocks > 1 ? QObject::tr("sub-block of %1 elements (%2 per super-block of %3)").arg(sub).arg(subBlocks).arg(f.block_size)
                                     : QObject::tr("block of %1 elements").arg(sub);
        if (n == "gguf_iq4_nl") {
            d.scales.push_back({QObject::tr("FP16 scale d"), QObject::tr("ggml's search over 15 scales"), 1});
            d.bytes = {{"d", 2, QObject::tr("FP16")}, {"qs", 16, QObject::tr("32 × 4-bit kvalues index: byte j = q[j] | q[j+16] << 4")}};
        } else {
            d.scales.push_back({withMin ? QObject::tr("%1-bit scale + %1-bit min").arg(scaleBits) : QObject::tr("%1-bit scale").arg(scaleBits),
                                QObject::tr("ggml's search, then nearest(scale / d)"), 1});
            d.scales.push_back({withMin ? QObject::tr("FP16 super scale d + min dmin") : QObject::tr("FP16 super scale d"),
                                QObject::tr("from the largest sub-block scale"), subBlocks});
            const int qsBytes = static_cast<int>(f.block_size) * std::min(f.element_bits, 4) / 8;
            if (n == "gguf_q2_k")
                d.bytes = {{"scales", 16, QObject::tr("16 × (4-bit scale | 4-bit min << 4)")}, {"qs", 64, QObject::tr("256 × 2 bit")},
                           {"d", 2, QObject::tr("FP16")}, {"dmin", 2, QObject::tr("FP16")}};
            else if (n == "gguf_q3_k")
                d.bytes = {{"hmask", 32, QObject::tr("256 high bits")}, {"qs", 64, QObject::tr("256 × low 2 bits")},
                           {"scales", 12, QObject::tr("16 × 6-bit scale")}, {"d", 2, QObject::tr("FP16")}};
            else if (n == "gguf_q4_k")
                d.bytes = {{"d", 2, QObject::tr("FP16")}, {"dmin", 2, QObject::tr("FP16")},
                           {"scales", 12, QObject::tr("8 × (6-bit scale, 6-bit min)")}, {"qs", qsBytes, QObject::tr("256 × 4 bit")}};
            else if (n == "gguf_q5_k")
                d.bytes = {{"d", 2, QObject::tr("FP16")}, {"dmin", 2, QObject::tr("FP16")},
                           {"scales", 12, QObject::tr("8 × (6-bit scale, 6-bit min)")}, {"qh", 32, QObject::tr("256 fifth bits")},
                           {"qs", 128, QObject::tr("256 × low 4 bits")}};
            else if (n == "gguf_q6_k")
                d.bytes = {{"ql", 128, QObject::tr("256 × low 4 bits")}, {"qh", 64, QObject::tr("256 × high 2 bits")},
                           {"scales", 16, QObject::tr("16 × int8 scale")}, {"d", 2, QObject::tr("FP16")}};
            else  // gguf_iq4_xs
                d.bytes = {{"d", 2, QObject::tr("FP16")}, {"scales_h", 2, QObject::tr("8 × high 2 bits")},
                           {"scales_l", 4, QObject::tr("8 × low 4 bits")}, {"qs", 128, QObject::tr("256 × 4-bit kvalues index")}};
        }
        int total = 0;
        for (const auto& field : d.bytes) total += field.bytes;
        d.storage = QObject::tr("%1 bytes per %2 of %3 → %4 bits/element")
                        .arg(total)
                        .arg(subBlocks > 1 ? QObject::tr("super-block") : QObject::tr("block"))
                        .arg(f.block_size)
                        .arg(bitsText(total * 8.0 / static_cast<double>(f.block_size)));
    } else if (family == "gguf") {
        d.blockLabel = QObject::tr("block of %1 elements").arg(d.blockSize);
        const std::string& n = f.name;
        if (n == "gguf_mxfp4") {
            d.scales.push_back({QObject::tr("E8M0 scale e"), QObject::tr("floor(log2f(amax)) − 2"), 1});
            d.bytes = {{"e", 1, QObject::tr("E8M0")}, {"qs", 16, QObject::tr("32 × 4 bit: byte j = x[j] | x[j+16] << 4")}};
        } else if (n == "gguf_q8_0") {
            d.scales.push_back({QObject::tr("FP16 scale d"), QObject::tr("amax / 127"), 1});
            d.bytes = {{"d", 2, QObject::tr("FP16")}, {"qs", 32, QObject::tr("32 × int8")}};
        } else if (n == "gguf_q4_1") {
            d.scales.push_back({QObject::tr("FP16 scale d + min m"), QObject::tr("d = (max − min) / 15"), 1});
            d.bytes = {{"d", 2, QObject::tr("FP16")}, {"m", 2, QObject::tr("FP16")},
                       {"qs", 16, QObject::tr("32 × 4 bit: byte j = q[j] | q[j+16] << 4")}};
        } else if (n == "gguf_q5_0") {
            d.scales.push_back({QObject::tr("FP16 scale d"), QObject::tr("max / −16"), 1});
            d.bytes = {{"d", 2, QObject::tr("FP16")}, {"qh", 4, QObject::tr("32 high bits")},
                       {"qs", 16, QObject::tr("32 × low 4 bits: byte j = q[j] | q[j+16] << 4")}};
        } else {
            d.scales.push_back({QObject::tr("FP16 scale d"), QObject::tr("max / −8"), 1});
            d.bytes = {{"d", 2, QObject::tr("FP16")}, {"qs", 16, QObject::tr("32 × 4 bit: byte j = q[j] | q[j+16] << 4")}};
        }
        int total = 0;
        for (const auto& field : d.bytes) total += field.bytes;
        d.storage = QObject::tr("%1 bytes per block of 32 → %2 bits/element").arg(total).arg(bitsText(total * 8.0 / 32));
    }
    return d;
}

BlockStructureWidget::BlockStructureWidget(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void BlockStructureWidget::setStructure(const FormatInfo& format, const QuantOptions& options) {
    m_diagram = describeBlockStructure(format, options);
    updateGeometry();
    update();
}

int BlockStructureWidget::contentHeight() const {
    const int fm = fontMetrics().height();
    int h = kMargin + static_cast<int>(m_diagram.scales.size()) * (kLevelHeight + kLevelGap) + kCellHeight + fm + 8;
    if (!m_diagram.bytes.isEmpty()) h += fm + kByteHeight + fm + 8;
    return h + fm * 2 + kMargin;
}

QSize BlockStructureWidget::sizeHint() const { return {480, contentHeight()}; }
QSize BlockStructureWidget::minimumSizeHint() const { return {300, contentHeight()}; }

void BlockStructureWidget::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) update();
}

void BlockStructureWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const bool dark = isDark(pal);
    const QColor text = pal.color(QPalette::Text);
    QColor muted = text;
    muted.setAlphaF(0.6);
    const QFontMetrics fm = fontMetrics();
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    const QFontMetrics sfm(small);
    const QColor elementColour = dark ? QColor(0x7a, 0xb4, 0xff) : QColor(0x2b, 0x63, 0xd9);
    const QColor levelColours[] = {dark ? QColor(0xf2, 0xb8, 0x4b) : QColor(0xc0, 0x6a, 0x00),
                                   dark ? QColor(0x4f, 0xd1, 0xb5) : QColor(0x0f, 0x8a, 0x72),
                                   dark ? QColor(0xc3, 0x9b, 0xff) : QColor(0x7e, 0x4c, 0xc2)};

    // Horizontal plan: block 0 drawn cell by cell (long groups abbreviated), then a faded stub of
    // block 1 and an ellipsis, so the repetition is visible without drawing 128 cells.
    const int W = width() - 2 * kMargin;
    const int blockSize = m_diagram.blockSize;
    const bool perTensor = blockSize == 0;
    const int shownCells = perTensor ? 24 : (blockSize > 32 ? 17 : blockSize);  // 12 + gap + 4 for long groups
    const int stubCells = perTensor ? 0 : 5;
    const int ellipsis = 24;
    const int blockGap = 10;
    const int cell = std::clamp((W - ellipsis - blockGap) / std::max(1, shownCells + stubCells), 6, 26);
    const int block0Width = cell * shownCells;
    const int block0X = kMargin;
    const int stubX = block0X + block0Width + blockGap;
    const int stubWidth = cell * stubCells;
    const int fullWidth = perTensor ? block0Width + ellipsis : stubX + stubWidth + ellipsis - kMargin;

    int y = kMargin;
    const int elementsY = y + static_cast<int>(m_diagram.scales.size()) * (kLevelHeight + kLevelGap);

    // Scale levels, coarsest on top.
    for (int li = static_cast<int>(m_diagram.scales.size()) - 1, row = 0; li >= 0; --li, ++row) {
        const auto& level = m_diagram.scales[li];
        const QColor c = levelColours[li % 3];
        QColor fill = c;
        fill.setAlphaF(dark ? 0.22 : 0.12);
        const int ly = y + row * (kLevelHeight + kLevelGap);
        auto drawBox = [&](QRect r, const QString& label, bool faded) {
            QPainterPath path;
            path.addRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
            QColor f = fill, border = c;
            if (faded) {
                f.setAlphaF(f.alphaF() * 0.5);
                border.setAlphaF(0.4);
            }
            p.fillPath(path, f);
            p.setPen(QPen(border, 1.2));
            p.drawPath(path);
            if (!label.isEmpty()) {
                p.setPen(text);
                p.setFont(font());
                p.drawText(r.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft,
                           fm.elidedText(label, Qt::ElideRight, r.width() - 12));
            }
            // Connector to the row below (the next finer scale, or the elements).
            p.setPen(QPen(faded ? muted : c, 1, Qt::DotLine));
            p.drawLine(r.center().x(), r.bottom(), r.center().x(), r.bottom() + kLevelGap);
        };
        const QString label = QStringLiteral("%1 = %2").arg(level.label, level.detail);
        if (level.blocksPerScale == 1 && !perTensor) {
            drawBox(QRect(block0X, ly, block0Width, kLevelHeight), label, false);
            drawBox(QRect(stubX, ly, stubWidth, kLevelHeight), QString(), true);
        } else {
            const QString span = level.blocksPerScale == 0 ? tr("one per tensor") : tr("one per %1 blocks").arg(level.blocksPerScale);
            drawBox(QRect(block0X, ly, fullWidth, kLevelHeight), QStringLiteral("%1   ·   %2").arg(label, span), false);
        }
    }

    // Element cells.
    QColor cellFill = elementColour;
    cellFill.setAlphaF(dark ? 0.25 : 0.14);
    auto drawCell = [&](int x, bool faded) {
        QColor f = cellFill, border = elementColour;
        if (faded) {
            f.setAlphaF(f.alphaF() * 0.45);
            border.setAlphaF(0.35);
        }
        const QRectF r(x + 1, elementsY, cell - 2, kCellHeight);
        p.fillRect(r, f);
        p.setPen(QPen(border, 1));
        p.drawRect(r);
    };
    for (int i = 0; i < shownCells; ++i) {
        if (blockSize > 32 && i == 12) {  // the abbreviation gap inside a long group
            p.setPen(muted);
            p.setFont(font());
            p.drawText(QRect(block0X + i * cell, elementsY, cell, kCellHeight), Qt::AlignCenter, QStringLiteral("…"));
            continue;
        }
        drawCell(block0X + i * cell, false);
    }
    for (int i = 0; i < stubCells; ++i) drawCell(stubX + i * cell, true);
    p.setPen(muted);
    p.setFont(font());
    const int ellipsisX = perTensor ? block0X + block0Width : stubX + stubWidth;
    p.drawText(QRect(ellipsisX, elementsY, ellipsis, kCellHeight), Qt::AlignCenter, QStringLiteral("…"));

    // Labels under the cells.
    y = elementsY + kCellHeight + 3;
    p.setFont(small);
    p.setPen(text);
    QString elementText = QStringLiteral("%1 × %2 (%3 bit)")
                              .arg(blockSize > 0 ? QString::number(blockSize) : QStringLiteral("N"), m_diagram.elementLabel)
                              .arg(m_diagram.elementBits);
    if (!m_diagram.blockLabel.isEmpty()) elementText += QStringLiteral(" — ") + m_diagram.blockLabel;
    p.drawText(QRect(block0X, y, W, sfm.height()), Qt::AlignLeft, sfm.elidedText(elementText, Qt::ElideRight, W));
    y += sfm.height() + 8;

    // GGUF: one stored block, byte by byte, widths proportional to the byte counts.
    if (!m_diagram.bytes.isEmpty()) {
        p.setFont(small);
        p.setPen(muted);
        p.drawText(QRect(kMargin, y, W, sfm.height()), Qt::AlignLeft, tr("Stored block (bytes, in file order):"));
        y += sfm.height() + 2;
        int total = 0;
        for (const auto& field : m_diagram.bytes) total += field.bytes;
        int x = kMargin;
        const double perByte = static_cast<double>(W) / total;
        for (int i = 0; i < m_diagram.bytes.size(); ++i) {
            const auto& field = m_diagram.bytes[i];
            const int w = std::max(34, static_cast<int>(std::lround(field.bytes * perByte)));
            const QColor c = i == m_diagram.bytes.size() - 1 ? elementColour : levelColours[i == 0 ? 0 : 2];
            QColor fill = c;
            fill.setAlphaF(dark ? 0.22 : 0.12);
            const QRect r(x, y, std::min(w, kMargin + W - x), kByteHeight);
            p.fillRect(r, fill);
            p.setPen(QPen(c, 1.2));
            p.drawRect(r.adjusted(0, 0, -1, -1));
            // Byte ticks.
            QColor tick = c;
            tick.setAlphaF(0.35);
            p.setPen(QPen(tick, 1));
            for (int k = 1; k < field.bytes; ++k) {
                const int tx = r.x() + k * r.width() / field.bytes;
                p.drawLine(tx, r.bottom() - 5, tx, r.bottom());
            }
            p.setPen(text);
            p.setFont(font());
            const QString label = QStringLiteral("%1 · %2 B").arg(field.name).arg(field.bytes);
            const QString full = label + QStringLiteral(" · ") + field.detail;
            p.drawText(r.adjusted(4, 0, -4, -4), Qt::AlignCenter,
                       fm.horizontalAdvance(full) < r.width() - 8 ? full : fm.elidedText(label, Qt::ElideRight, r.width() - 8));
            x += r.width();
        }
        y += kByteHeight + 8;
    }

    p.setFont(font());
    p.setPen(text);
    p.drawText(QRect(kMargin, y, W, fm.height() * 2), Qt::AlignLeft | Qt::TextWordWrap, m_diagram.storage);
}

}  // namespace ql
