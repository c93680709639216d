// SPDX-License-Identifier: GPL-3.0-or-later
// How a format groups elements under scales: a row of element cells (one block drawn in full,
// the next hinted), the scale levels above it (block, group, tensor) and, for GGUF, the byte
// layout of one stored block, with the storage cost spelled out.
#pragma once

#include <QString>
#include <QVector>
#include <QWidget>

#include "engine/core/format_catalog.h"
#include "engine/core/quant_options.h"

namespace ql {

struct BlockDiagram {
    struct ScaleLevel {
        QString label;   // "E4M3 block scale s"
        QString detail;  // "= block amax / (6·g)"
        int blocksPerScale = 1;  // 1: one per block; N: one per N blocks; 0: one per tensor (or channel)
    };
    struct ByteField {
        QString name;    // "d"
        int bytes = 0;
        QString detail;  // "FP16 scale"
    };
    QString elementLabel;    // "E2M1"
    int elementBits = 0;
    int blockSize = 0;       // elements sharing the finest scale; 0: the whole tensor or channel
    QString blockLabel;      // "block of 16 elements"
    QVector<ScaleLevel> scales;  // finest first
    QVector<ByteField> bytes;    // one stored block (GGUF); empty otherwise
    QString storage;         // the bits-per-element arithmetic
};

// The diagram for `format` under `options` (granularity, group size, double quantization).
BlockDiagram describeBlockStructure(const FormatInfo& format, const QuantOptions& options);

class BlockStructureWidget : public QWidget {
    Q_OBJECT
public:
    explicit BlockStructureWidget(QWidget* parent = nullptr);

    void setStructure(const FormatInfo& format, const QuantOptions& options);
    const BlockDiagram& diagram() const { return m_diagram; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    int contentHeight() const;

    BlockDiagram m_diagram;
};

}  // namespace ql
