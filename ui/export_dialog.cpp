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
#include <QGroupBox>
#include <QHeaderView>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/api/lora_api.h"
#include "ui/background_call.h"

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
    {"onnx", "ONNX QDQ model (ONNX Runtime, TensorRT)",
     "model.onnx (opset 23) with QuantizeLinear / DequantizeLinear pairs for INT8 and FP8 and blocked INT4 "
     "weights, its weights in model.onnx.data: a Llama-family decoder (input_ids to logits) or a BERT encoder "
     "(to the last hidden state)."},
    {"fakequant", "Fake-quantized HF checkpoint",
     "The model's own layout and dtypes with every quantized weight replaced by its dequantized value, for tools "
     "that do not read low-bit formats."},
    {"report", "Report (HTML)",
     "One self-contained HTML file with the model, recipe, metrics, curves, per-layer errors and environment, plus "
     "metrics.csv and recipe.json."},
};
// A LoRA run's exports (engine/api/lora_api.h run_lora_export).
constexpr Kind kLoraKinds[] = {
    {"peft", "PEFT adapter",
     "adapter_config.json and adapter_model.safetensors as PEFT loads them onto transformers' model of the base "
     "(for QLoRA a bitsandbytes NF4 base): the base stays quantized, nothing is merged."},
    {"merged-fp", "Merged, full precision (HF folder)",
     "The base dequantized plus the adapter's update: exactly what was trained, at 16/32 bits a weight."},
    {"merged-hf-modelopt", "Merged, re-quantized (Model Optimizer HF checkpoint)",
     "The merged weights quantized again in the base's format: the size of the base, at the cost the preview shows."},
    {"merged-gguf", "Merged, re-quantized (GGUF)", "The merged weights as a llama.cpp GGUF file."},
    {"merged-fakequant", "Merged, re-quantized (fake-quantized HF checkpoint)",
     "The merged weights on the base's grid, dequantized, in the model's own layout."},
};
// Every model export is checked by the Export Doctor before it is renamed into place.

}  // namespace

ExportDialog::ExportDialog(const QString& runLabel, const QString& baseFolder, QWidget* parent)
    : QDialog(parent), m_base(baseFolder) {
    setWindowTitle(tr("Export %1").arg(runLabel));
    auto* layout = new QVBoxLayout(this);
    m_kinds = new QButtonGroup(this);
    int i = 0;
    const auto addKind = [&](const Kind& k, bool lora) {
        auto* radio = new QRadioButton(tr(k.title), this);
        radio->setObjectName(QStringLiteral("export:%1").arg(QString::fromLatin1(k.id)));
        radio->setProperty("kind", QString::fromLatin1(k.id));
        radio->setProperty("lora", lora);
        auto* text = new QLabel(tr(k.description), this);
        text->setWordWrap(true);
        text->setIndent(24);
        text->setStyleSheet(QStringLiteral("color: palette(mid);"));
        radio->setProperty("description", QVariant::fromValue(static_cast<QObject*>(text)));
        layout->addWidget(radio);
        layout->addWidget(text);
        radio->setVisible(!lora);
        text->setVisible(!lora);
        m_kinds->addButton(radio, i++);
    };
    for (const Kind& k : kKinds) addKind(k, false);
    for (const Kind& k : kLoraKinds) addKind(k, true);
    m_kinds->button(0)->setChecked(true);

    // The merge-cost preview (LoRA runs only).
    auto* preview = new QGroupBox(tr("Merge preview: what merging the adapter costs"), this);
    preview->setObjectName(QStringLiteral("mergePreview"));
    m_preview = preview;
    auto* pv = new QVBoxLayout(preview);
    auto* dataRow = new QHBoxLayout;
    m_previewData = new QLineEdit(preview);
    m_previewData->setObjectName(QStringLiteral("previewData"));
    m_previewData->setToolTip(tr("Evaluation data for the preview (docs/DATA.md): the run's own eval data by default."));
    m_previewButton = new QPushButton(tr("Preview"), preview);
    m_previewButton->setObjectName(QStringLiteral("previewButton"));
    dataRow->addWidget(new QLabel(tr("On"), preview));
    dataRow->addWidget(m_previewData, 1);
    dataRow->addWidget(m_previewButton);
    pv->addLayout(dataRow);
    // An eval suite each form answers (docs/EVAL_SUITES.md): the verdicts a merge would flip.
    auto* suiteRow = new QHBoxLayout;
    m_previewSuite = new QLineEdit(preview);
    m_previewSuite->setObjectName(QStringLiteral("previewSuite"));
    m_previewSuite->setPlaceholderText(tr("none — or 'default', or an eval suite .jsonl"));
    m_previewSuite->setToolTip(tr("Each form also answers this eval suite (greedy); the items whose verdict a merge flips are listed."));
    m_previewSuiteItems = new QSpinBox(preview);
    m_previewSuiteItems->setObjectName(QStringLiteral("previewSuiteItems"));
    m_previewSuiteItems->setRange(0, 100000);
    m_previewSuiteItems->setValue(20);
    m_previewSuiteItems->setSpecialValueText(tr("all"));
    m_previewSuiteItems->setToolTip(tr("The suite's first N items (each form answers them: three generations per item)."));
    suiteRow->addWidget(new QLabel(tr("Suite"), preview));
    suiteRow->addWidget(m_previewSuite, 1);
    suiteRow->addWidget(new QLabel(tr("items"), preview));
    suiteRow->addWidget(m_previewSuiteItems);
    pv->addLayout(suiteRow);
    m_previewTable = new QTableWidget(3, 5, preview);
    m_previewTable->setObjectName(QStringLiteral("previewTable"));
    m_previewTable->setHorizontalHeaderLabels({tr("loss"), tr("perplexity"), tr("KL vs adapted"), tr("top-1 agreement"), tr("suite passed")});
    m_previewTable->setVerticalHeaderLabels({tr("base + adapter (trained)"), tr("merged, re-quantized"), tr("merged, full precision")});
    // Every header readable: the columns as wide as their contents, the last one taking what is left.
    m_previewTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_previewTable->horizontalHeader()->setStretchLastSection(true);
    m_previewTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_previewTable->setFixedHeight(m_previewTable->verticalHeader()->length() + m_previewTable->horizontalHeader()->height() + 4);
    pv->addWidget(m_previewTable);
    m_previewNote = new QLabel(tr("Press Preview to compare the three on the data."), preview);
    m_previewNote->setObjectName(QStringLiteral("previewNote"));
    m_previewNote->setWordWrap(true);
    pv->addWidget(m_previewNote);
    m_previewLayers = new QTableWidget(0, 4, preview);
    m_previewLayers->setObjectName(QStringLiteral("previewLayers"));
    m_previewLayers->setHorizontalHeaderLabels({tr("layer"), tr("codes changed"), tr("|sBA| / |W|"), tr("update lost")});
    m_previewLayers->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_previewLayers->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_previewLayers->verticalHeader()->setVisible(false);
    m_previewLayers->setMinimumHeight(140);
    m_previewLayers->setToolTip(tr("Per adapted layer, most changed first: the fraction of its codes the re-quantized merge "
                                   "moves, the update's size relative to the weight, and how much of the update the "
                                   "re-quantization loses or distorts (|Q(W + sBA) - (W + sBA)| / |sBA|)."));
    pv->addWidget(m_previewLayers);
    layout->addWidget(preview);
    preview->setVisible(false);
    connect(m_previewButton, &QPushButton::clicked, this, &ExportDialog::startPreview);
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
    if (kind == QLatin1String("merged-gguf")) return QDir(base).filePath(QStringLiteral("merged-%1.gguf").arg(ggufType));
    return QDir(base).filePath(QStringLiteral("export-%1").arg(kind));
}

void ExportDialog::setLoraRun(const QString& runFolder, const QString& previewData) {
    m_loraRun = runFolder;
    for (QAbstractButton* b : m_kinds->buttons()) {
        const bool show = b->property("lora").toBool();
        b->setVisible(show);
        if (auto* text = qobject_cast<QWidget*>(b->property("description").value<QObject*>())) text->setVisible(show);
    }
    setKind(QStringLiteral("peft"));
    m_previewData->setText(previewData);
    m_preview->setVisible(true);
    resize(800, sizeHint().height());
}

void ExportDialog::startPreview() {
    if (m_loraRun.isEmpty()) return;
    LoraPreviewRequest req;
    req.run = m_loraRun.toStdString();
    req.data = m_previewData->text().trimmed().toStdString();
    req.suite = m_previewSuite->text().trimmed().toStdString();
    req.suite_limit = m_previewSuiteItems->value();
    m_previewButton->setEnabled(false);
    m_previewNote->setText(tr("Computing: the adapted model, the merged model re-quantized and in full precision …"));
    backgroundCall<LoraMergePreview>(
        this,
        [req] {
            NullJobSink sink;
            CancellationToken cancel;
            return run_lora_preview(req, sink, cancel);
        },
        [this](const std::optional<LoraMergePreview>& result, const QString& error) {
            m_previewButton->setEnabled(true);
            if (!result) {
                m_previewNote->setText(tr("The preview failed: %1").arg(error));
                emit previewFinished(false);
                return;
            }
            const LoraMergePreview& p = *result;
            const EvalMetrics* rows[] = {&p.adapted, &p.merged_requantized, &p.merged_fp};
            for (int r = 0; r < 3; ++r) {
                const EvalMetrics& m = *rows[r];
                const auto cell = [&](int c, const QString& text) { m_previewTable->setItem(r, c, new QTableWidgetItem(text)); };
                cell(0, QString::number(m.loss, 'f', 4));
                cell(1, m.ppl ? QString::number(*m.ppl, 'f', 3) : QStringLiteral("–"));
                cell(2, m.kl ? QString::number(*m.kl, 'e', 2) : QStringLiteral("–"));
                cell(3, m.agreement ? QStringLiteral("%1 %").arg(100 * *m.agreement, 0, 'f', 2) : QStringLiteral("–"));
            }
            // The suite: items passed, and for the merges how many verdicts flipped (their ids in the tooltip).
            for (int r = 0; r < 3; ++r) m_previewTable->setItem(r, 4, new QTableWidgetItem(QStringLiteral("–")));
            if (p.suite) {
                const MergeSuiteResult& st = *p.suite;
                const int64_t passed[] = {st.passed_adapted, st.passed_merged_requantized, st.passed_merged_fp};
                const std::vector<std::string>* flips[] = {nullptr, &st.flips_merged_requantized, &st.flips_merged_fp};
                for (int r = 0; r < 3; ++r) {
                    QString text = QStringLiteral("%1 / %2").arg(passed[r]).arg(st.items);
                    QStringList ids;
                    if (flips[r]) {
                        for (const std::string& id : *flips[r]) ids << QString::fromStdString(id);
                        text += ids.isEmpty() ? tr(" · no flips") : tr(" · %n flipped", nullptr, static_cast<int>(ids.size()));
                    }
                    auto* item = new QTableWidgetItem(text);
                    item->setToolTip(ids.isEmpty() ? QString::fromStdString(st.suite) : tr("Flipped against the adapted model: %1").arg(ids.join(QStringLiteral(", "))));
                    m_previewTable->setItem(r, 4, item);
                }
            }
            QString note = tr("Base: %1. The re-quantized merge changes %2 % of the adapted layers' codes.")
                               .arg(QString::fromStdString(p.base_summary))
                               .arg(100 * p.codes_changed, 0, 'f', 2);
            if (p.base_quantizes_inputs)
                note += tr(" The base also quantizes activations: the full-precision merge runs them in full precision, "
                           "so its KL includes that change too.");
            m_previewNote->setText(note);
            std::vector<MergeLayerCost> layers = p.layers;
            std::stable_sort(layers.begin(), layers.end(),
                             [](const MergeLayerCost& a, const MergeLayerCost& b) { return a.codes_changed > b.codes_changed; });
            m_previewLayers->setRowCount(static_cast<int>(layers.size()));
            for (int r = 0; r < static_cast<int>(layers.size()); ++r) {
                const MergeLayerCost& l = layers[static_cast<size_t>(r)];
                m_previewLayers->setItem(r, 0, new QTableWidgetItem(QString::fromStdString(l.module)));
                m_previewLayers->setItem(r, 1, new QTableWidgetItem(QStringLiteral("%1 %").arg(100 * l.codes_changed, 0, 'f', 2)));
                m_previewLayers->setItem(r, 2, new QTableWidgetItem(QString::number(l.update_norm, 'e', 2)));
                m_previewLayers->setItem(r, 3, new QTableWidgetItem(QStringLiteral("%1 %").arg(100 * l.requant_error, 0, 'f', 1)));
            }
            m_previewLayers->resizeColumnsToContents();
            m_previewLayers->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
            emit previewFinished(true);
        });
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
    m_ggufType->setEnabled(c.kind == QLatin1String("gguf") || c.kind == QLatin1String("merged-gguf"));
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
