// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/export_dialog.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

namespace ql {
namespace {

struct Kind {
    const char* id;
    const char* title;
    const char* description;
};
constexpr Kind kKinds[] = {
    {"hf-modelopt", "HF checkpoint (Model Optimizer layout)",
     "Real packed low-bit weights with their scales, hf_quant_config.json and config.json's quantization_config: "
     "vLLM and TensorRT-LLM load it, and so does QuantLab."},
    {"compressed-tensors", "HF checkpoint (compressed-tensors layout)",
     "vLLM's and llm-compressor's own layout: packed INT4/INT8, FP8, NVFP4 and MXFP4 weights with config_groups in "
     "config.json's quantization_config, and KV-cache scales where the recipe calibrated them."},
    {"gguf", "GGUF for llama.cpp",
     "One .gguf file with the architecture and tokenizer metadata llama.cpp needs (Llama-family and GPT-2)."},
    {"fakequant", "Fake-quantized HF checkpoint",
     "The model's own layout and dtypes with every quantized weight replaced by its dequantized value, for tools "
     "that do not read low-bit formats."},
    {"report", "Report (HTML)",
     "One self-contained HTML file with the model, recipe, metrics, curves, per-layer errors and environment, plus "
     "metrics.csv and recipe.json."},
};
// Every model export is checked by the Export Doctor before it is renamed into place.

}  // namespace

ExportDialog::ExportDialog(const QString& runLabel, const QString& baseFolder, QWidget* parent)
    : QDialog(parent), m_base(baseFolder) {
    setWindowTitle(tr("Export %1").arg(runLabel));
    auto* layout = new QVBoxLayout(this);
    m_kinds = new QButtonGroup(this);
    int i = 0;
    for (const Kind& k : kKinds) {
        auto* radio = new QRadioButton(tr(k.title), this);
        radio->setObjectName(QStringLiteral("export:%1").arg(QString::fromLatin1(k.id)));
        radio->setProperty("kind", QString::fromLatin1(k.id));
        auto* text = new QLabel(tr(k.description), this);
        text->setWordWrap(true);
        text->setIndent(24);
        text->setStyleSheet(QStringLiteral("color: palette(mid);"));
        layout->addWidget(radio);
        layout->addWidget(text);
        m_kinds->addButton(radio, i++);
    }
    m_kinds->button(0)->setChecked(true);
    auto* form = new QFormLayout;
    m_ggufType = new QComboBox(this);
    m_ggufType->setObjectName(QStringLiteral("ggufType"));
    for (const char* t : {"q4_0", "q4_1", "q8_0", "mxfp4", "f16", "f32"}) m_ggufType->addItem(QString::fromLatin1(t));
    m_ggufType->setToolTip(tr("The GGUF tensor type of the quantized weights (norms and biases stay F32, as llama.cpp's converter "
                              "writes them)."));
    form->addRow(tr("GGUF type"), m_ggufType);
    auto* outRow = new QHBoxLayout;
    m_out = new QLineEdit(this);
    m_out->setObjectName(QStringLiteral("exportOut"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    outRow->addWidget(m_out, 1);
    outRow->addWidget(browse);
    form->addRow(tr("Write to"), outRow);
    m_force = new QCheckBox(tr("Replace it if it exists"), this);
    m_force->setObjectName(QStringLiteral("exportForce"));
    form->addRow(QString(), m_force);
    layout->addLayout(form);
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &ExportDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_kinds, &QButtonGroup::idToggled, this, [this](int, bool on) {
        if (on) updateFields();
    });
    connect(m_ggufType, &QComboBox::currentIndexChanged, this, &ExportDialog::updateFields);
    connect(m_out, &QLineEdit::textEdited, this, [this] { m_outEdited = true; });
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString kind = choice().kind;
        const QString path = kind == QLatin1String("gguf")
                                 ? QFileDialog::getSaveFileName(this, tr("GGUF file"), m_out->text(), tr("GGUF (*.gguf)"))
                                 : QFileDialog::getSaveFileName(this, tr("Output folder"), m_out->text());
        if (!path.isEmpty()) {
            m_out->setText(path);
            m_outEdited = true;
        }
    });
    updateFields();
    resize(560, sizeHint().height());
}

QString ExportDialog::proposedPath(const QString& base, const QString& kind, const QString& ggufType) {
    if (kind == QLatin1String("gguf")) return QDir(base).filePath(QStringLiteral("model-%1.gguf").arg(ggufType));
    return QDir(base).filePath(QStringLiteral("export-%1").arg(kind));
}

void ExportDialog::setKind(const QString& kind) {
    for (QAbstractButton* b : m_kinds->buttons())
        if (b->property("kind").toString() == kind) b->setChecked(true);
}

ExportChoice ExportDialog::choice() const {
    ExportChoice c;
    c.kind = m_kinds->checkedButton()->property("kind").toString();
    c.ggufType = m_ggufType->currentText();
    c.out = m_out->text().trimmed();
    c.force = m_force->isChecked();
    return c;
}

void ExportDialog::updateFields() {
    const ExportChoice c = choice();
    m_ggufType->setEnabled(c.kind == QLatin1String("gguf"));
    if (!m_outEdited) m_out->setText(proposedPath(m_base, c.kind, c.ggufType));
    m_note->setText(QFileInfo::exists(m_out->text()) ? tr("%1 exists already.").arg(m_out->text()) : QString());
}

void ExportDialog::accept() {
    const ExportChoice c = choice();
    if (c.out.isEmpty()) {
        QMessageBox::warning(this, windowTitle(), tr("Choose where to write the export."));
        return;
    }
    if (QFileInfo::exists(c.out) && !c.force) {
        const auto answer = QMessageBox::question(this, windowTitle(), tr("%1 exists already. Replace it?").arg(c.out));
        if (answer != QMessageBox::Yes) return;
        m_force->setChecked(true);
    }
    QDialog::accept();
}

}  // namespace ql
