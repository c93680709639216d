// SPDX-License-Identifier: GPL-3.0-or-later
// File > Open Model: the models QuantLab knows with one click (the built-in demo, the real
// SmolLM2-135M-Instruct from the model cache: engine/core/model_cache.h), or any HF model folder,
// QuantLab checkpoint or GGUF file picked from disk.
#pragma once

#include <QDialog>
#include <QString>

class QListWidget;

namespace ql {

class OpenModelDialog : public QDialog {
    Q_OBJECT
public:
    explicit OpenModelDialog(QWidget* parent = nullptr);
    // What to open: "demo", a path, or "" (cancelled).
    QString choice() const { return m_choice; }
    QListWidget* list() const { return m_list; }

private:
    void accept(const QString& choice);
    QListWidget* m_list = nullptr;
    QString m_choice;
};

}  // namespace ql
