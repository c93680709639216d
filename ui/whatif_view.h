// SPDX-License-Identifier: GPL-3.0-or-later
// The What-if view (docs/GUI.md "What-if"): toggle the KV-cache format and the rotation for the
// open model and the editor's recipe, and see without a full run what they change -- kurtosis and
// max|x|/RMS of every quantized layer's input and of every attention's cached K and V before and
// after, their histograms (before filled, after as an outline) with the after-quantizer's grid,
// the per-layer output SQNR, the output error (KL to the FP model, or 1 − cosine of the
// embeddings for encoders) on a small batch, and weight and KV-cache memory. One click then runs
// the full PTQ or QAD with that choice. The numbers come from engine/api/whatif_api.h; the view
// only shows them and says what the user asked for (WhatIfController runs the job).
#pragma once

#include <QString>
#include <QWidget>

#include "engine/api/model_api.h"
#include "engine/api/whatif_api.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ql {

class BarChart;
class HistogramPlot;

class WhatIfView : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfView(QWidget* parent = nullptr);

    // The open model: encoders (no attention site) get no KV-cache choice.
    void setModel(const ModelSummary& summary);
    void setBusy(bool busy);
    void setReport(const WhatIfReport& report);
    bool hasReport() const { return m_hasReport; }
    const WhatIfReport& report() const { return m_report; }
    void setMessage(const QString& text, bool isError);

    // The choice (a --kv-cache name or "none"; hadamard, rht or "none").
    QString kvCache() const;
    QString rotation() const;
    bool setKvCache(const QString& name);
    bool setRotation(const QString& name);
    int samples() const;
    // Selects the row of `tensor` and shows its histograms (tests, screenshots).
    bool selectTensor(const QString& tensor);
    QTableWidget* table() const { return m_table; }

signals:
    void computeRequested(const QString& kvCache, const QString& rotation, int samples);
    void runRequested(const QString& kvCache, const QString& rotation, const QString& method);  // "ptq" | "qad"

private:
    void showTensor(int row);
    void fillSummary();

    QComboBox* m_kv = nullptr;
    QComboBox* m_rotation = nullptr;
    QSpinBox* m_samples = nullptr;
    QPushButton* m_compute = nullptr;
    QPushButton* m_runPtq = nullptr;
    QPushButton* m_runQad = nullptr;
    QLabel* m_model = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_notes = nullptr;
    QLabel* m_message = nullptr;
    QTableWidget* m_table = nullptr;
    HistogramPlot* m_histogram = nullptr;
    BarChart* m_layers = nullptr;
    WhatIfReport m_report;
    bool m_hasReport = false;
    bool m_hasKvCache = true;
    bool m_encoder = false;
};

}  // namespace ql
