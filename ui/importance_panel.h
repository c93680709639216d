// SPDX-License-Identifier: GPL-3.0-or-later
// The Layer Inspector's importance tab: an importance matrix (llama.cpp's imatrix, opened from a
// file or collected from the open model's calibration data) as per-layer statistics. A table has
// one row per weight (layer, tensor, tokens, mean / std / kurtosis of the mean squared
// activations, % active, entropy, ZD, cosine to the previous layer, the top columns); for the
// selected row one chart shows every input column's importance with the top columns labelled,
// and another the cosine of that tensor kind to its previous layer across layers (where a
// model's importance changes character). Plain facade types in (engine/api/imatrix_api.h).
#pragma once

#include <QString>
#include <QWidget>

#include <optional>

#include "engine/api/imatrix_api.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace ql {

class BarChart;

class ImportancePanel : public QWidget {
    Q_OBJECT
public:
    explicit ImportancePanel(QWidget* parent = nullptr);

    void setReport(const ImatrixReport& report, const QString& source);
    void setStatus(const QString& text);
    bool hasReport() const { return m_report.has_value(); }
    const ImatrixReport* report() const { return m_report ? &*m_report : nullptr; }
    // Selects the row of entry `name` ("blk.1.attn_v.weight"); false when absent.
    bool selectEntry(const QString& name);
    QString currentEntry() const;

    QTableWidget* table() const { return m_table; }
    BarChart* columnChart() const { return m_columns; }
    BarChart* cosineChart() const { return m_cosine; }

signals:
    void openRequested(const QString& path);  // read an imatrix file (GGUF or .dat)
    void computeRequested();                  // collect one from the open model's calibration data

private:
    void refreshSelection();

    std::optional<ImatrixReport> m_report;
    QPushButton* m_open = nullptr;
    QPushButton* m_compute = nullptr;
    QLabel* m_status = nullptr;
    QTableWidget* m_table = nullptr;
    BarChart* m_columns = nullptr;
    BarChart* m_cosine = nullptr;
};

}  // namespace ql
