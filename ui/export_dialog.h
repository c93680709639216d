// SPDX-License-Identifier: GPL-3.0-or-later
// Export a run with one click: what to write (Model Optimizer or compressed-tensors HF checkpoint, GGUF for llama.cpp,
// fake-quantized HF checkpoint, HTML report), the GGUF tensor type, and where. Defaults: the
// HF checkpoint, into a folder beside the run's output. Never overwrites without asking.
#pragma once

#include <QDialog>
#include <QString>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace ql {

struct ExportChoice {
    QString kind;       // "hf-modelopt", "compressed-tensors", "gguf", "fakequant", "report"
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
};

}  // namespace ql
