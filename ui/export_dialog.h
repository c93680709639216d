// SPDX-License-Identifier: GPL-3.0-or-later
// Export a run with one click: what to write (Model Optimizer or compressed-tensors HF checkpoint, GGUF for llama.cpp,
// fake-quantized HF checkpoint, HTML report), the GGUF tensor type, and where. Defaults: the
// HF checkpoint, into a folder beside the run's output. Never overwrites without asking.
// A LoRA run exports its adapter (PEFT) or the merged model, and the dialog shows the merge-cost
// preview (engine/api/lora_api.h run_lora_preview) before anything is written.
#pragma once

#include <QDialog>
#include <QString>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ql {

struct ExportChoice {
    QString kind;       // "hf-modelopt", "compressed-tensors", "gguf", "onnx", "fakequant", "report"
    QString ggufType;   // with gguf: f32 f16 q8_0 q4_0 q4_1 mxfp4
    QString out;        // folder or file
    bool force = false; // replace an existing output
};

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    // `runLabel` names the run; `baseFolder` is where outputs are proposed.
    ExportDialog(const QString& runLabel, const QString& baseFolder, QWidget* parent = nullptr);
    ExportChoice choice() const;
    void setKind(const QString& kind);
    // A LoRA run: the kinds become peft / merged-*, and the merge-preview panel appears, computing
    // on `previewData` (editable) when its button is pressed.
    void setLoraRun(const QString& runFolder, const QString& previewData);
    bool isLoraRun() const { return !m_loraRun.isEmpty(); }
    // Runs the preview now (tests, screenshots); the table fills when it finishes (previewFinished).
    void startPreview();

signals:
    void previewFinished(bool ok);

public:
    // The suffix/folder proposal for a kind: "<base>/export-hf-modelopt", "<base>/model-q4_0.gguf" …
    static QString proposedPath(const QString& base, const QString& kind, const QString& ggufType);

protected:
    void accept() override;

private:
    void updateFields();

    QString m_base;
    QButtonGroup* m_kinds = nullptr;
    QComboBox* m_ggufType = nullptr;
    QLineEdit* m_out = nullptr;
    QCheckBox* m_force = nullptr;
    QLabel* m_note = nullptr;
    bool m_outEdited = false;
    QString m_loraRun;
    QWidget* m_preview = nullptr;
    QLineEdit* m_previewData = nullptr;
    QLineEdit* m_previewSuite = nullptr;
    QSpinBox* m_previewSuiteItems = nullptr;
    QPushButton* m_previewButton = nullptr;
    QTableWidget* m_previewTable = nullptr;
    QTableWidget* m_previewLayers = nullptr;
    QLabel* m_previewNote = nullptr;
};

}  // namespace ql
