// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/recipe_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStandardItemModel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>
#include <stdexcept>

#include "engine/core/format_catalog.h"
#include "engine/api/model_api.h"
#include "engine/api/ptq_api.h"
#include "engine/core/qat_plan.h"

namespace ql {
namespace {

struct QuickStart {
    const char* name;
    const char* preset;
    RunSetup::Method method;
};
// The three a new user reaches first (NVFP4 is what Model Optimizer's QAT/QAD examples use),
// then the other common starting points.
constexpr QuickStart kQuickStarts[] = {
    {"NVFP4 PTQ", "NVFP4_DEFAULT", RunSetup::Method::Ptq},
    {"NVFP4 QAT", "NVFP4_DEFAULT", RunSetup::Method::Qat},
    {"NVFP4 QAD", "NVFP4_DEFAULT", RunSetup::Method::Qad},
    {"NF4 LoRA", "NF4", RunSetup::Method::Lora},
    {"MXFP4 PTQ", "MXFP4", RunSetup::Method::Ptq},
    {"INT4 AWQ", "INT4_AWQ", RunSetup::Method::Ptq},
    {"FP8 PTQ", "FP8_DEFAULT", RunSetup::Method::Ptq},
};

QString presetText() { return QObject::tr("(preset)"); }

}  // namespace

RecipeEditor::RecipeEditor(QWidget* parent) : QWidget(parent) {
    for (const std::string& name : recipe_preset_names()) {
        try {
            m_presetJson.insert(QString::fromStdString(name),
                                QString::fromStdString(recipe_name_and_json(name).second));
        } catch (const std::exception&) {
            // A preset that does not load is a build defect the recipe tests catch; skip it here.
        }
    }
    buildUi();
    setPreset(QStringLiteral("NVFP4_DEFAULT"));
    updateMethodFields();
    recompose();
}

QStringList RecipeEditor::quickStarts() const {
    QStringList names;
    for (const QuickStart& q : kQuickStarts) names << QString::fromLatin1(q.name);
    return names;
}

void RecipeEditor::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    outer->addWidget(scroll);
    auto* body = new QWidget(scroll);
    scroll->setWidget(body);
    auto* layout = new QVBoxLayout(body);

    auto* quick = new QGroupBox(tr("Quick start"), body);
    auto* quickLayout = new QGridLayout(quick);
    int i = 0;
    for (const QuickStart& q : kQuickStarts) {
        auto* b = new QPushButton(QString::fromLatin1(q.name), quick);
        b->setObjectName(QStringLiteral("quick:%1").arg(QString::fromLatin1(q.name)));
        b->setToolTip(tr("Preset %1 with %2").arg(QString::fromLatin1(q.preset), methodName(q.method).toUpper()));
        connect(b, &QPushButton::clicked, this, [this, name = QString::fromLatin1(q.name)] { applyQuickStart(name); });
        quickLayout->addWidget(b, i / 3, i % 3);
        ++i;
    }
    layout->addWidget(quick);

    auto* recipeBox = new QGroupBox(tr("Recipe"), body);
    auto* form = new QFormLayout(recipeBox);
    m_preset = new QComboBox(recipeBox);
    m_preset->setObjectName(QStringLiteral("preset"));
    m_preset->addItems(m_presetJson.keys());
    m_preset->setToolTip(tr("The starting recipe. Names follow NVIDIA Model Optimizer's configs (NVFP4_DEFAULT_CFG …); "
                            "docs/RECIPES.md lists what each one quantizes."));
    form->addRow(tr("Preset"), m_preset);
    m_method = new QComboBox(recipeBox);
    m_method->setObjectName(QStringLiteral("method"));
    m_method->addItem(tr("PTQ — post-training quantization"), static_cast<int>(RunSetup::Method::Ptq));
    m_method->addItem(tr("QAT — quantization-aware training"), static_cast<int>(RunSetup::Method::Qat));
    m_method->addItem(tr("QAD — distillation from the FP teacher"), static_cast<int>(RunSetup::Method::Qad));
    m_method->addItem(tr("LoRA / QLoRA — adapters on the frozen quantized base"), static_cast<int>(RunSetup::Method::Lora));
    m_method->setToolTip(tr("PTQ calibrates and rounds, no training. QAT fine-tunes the quantized model on the task loss "
                            "with straight-through gradients. QAD trains it to match the full-precision teacher's "
                            "output distribution (KL loss): more robust to the choice of data (QAT.md). LoRA trains "
                            "low-rank adapters beside the layers of the base the recipe quantizes, which stays frozen "
                            "(QLoRA: an NF4 base; docs/TRAINING.md \"LoRA and QLoRA\")."));
    form->addRow(tr("Method"), m_method);

    m_weightFormat = new QComboBox(recipeBox);
    m_weightFormat->setObjectName(QStringLiteral("weightFormat"));
    m_inputFormat = new QComboBox(recipeBox);
    m_inputFormat->setObjectName(QStringLiteral("inputFormat"));
    m_weightFormat->addItem(presetText(), QString());
    m_inputFormat->addItem(presetText(), QString());
    m_inputFormat->addItem(tr("off (weight-only)"), QStringLiteral("off"));
    for (const FormatInfo& f : all_formats()) {
        if (f.family == "passthrough" || f.family == "gguf") continue;
        const QString label = QStringLiteral("%1 — %2 bits").arg(QString::fromStdString(f.title)).arg(f.bits_per_element, 0, 'g', 4);
        m_weightFormat->addItem(label, QString::fromStdString(f.name));
        m_inputFormat->addItem(label, QString::fromStdString(f.name));
    }
    m_weightFormat->setToolTip(tr("Weight format for every layer the preset quantizes (lm_head and routers stay as the preset "
                                  "leaves them). Bits include the block scales."));
    m_inputFormat->setToolTip(tr("Activation (input) format. NVFP4 inputs get a calibrated global scale and dynamic block "
                                 "scales; MX inputs are always dynamic; FP8/INT inputs are static per tensor."));
    form->addRow(tr("Weights"), m_weightFormat);
    auto* granRow = new QHBoxLayout;
    m_granularity = new QComboBox(recipeBox);
    m_granularity->setObjectName(QStringLiteral("granularity"));
    m_granularity->addItem(presetText(), QString());
    for (const char* g : {"tensor", "channel", "group"}) m_granularity->addItem(QString::fromLatin1(g), QString::fromLatin1(g));
    m_granularity->setToolTip(tr("Which elements share a scale (INT and FP8 formats). Block formats (NVFP4 16, MX 32, NF4 64) "
                                 "have their block size built in."));
    m_groupSize = new QSpinBox(recipeBox);
    m_groupSize->setObjectName(QStringLiteral("groupSize"));
    m_groupSize->setRange(8, 4096);
    m_groupSize->setSingleStep(32);
    m_groupSize->setValue(128);
    m_groupSize->setPrefix(tr("group "));
    m_groupSize->setToolTip(tr("Elements per scale along the input dimension for granularity 'group'; must divide every "
                               "quantized layer's input size."));
    granRow->addWidget(m_granularity, 1);
    granRow->addWidget(m_groupSize);
    form->addRow(tr("Granularity"), granRow);
    form->addRow(tr("Activations"), m_inputFormat);
    auto* algoRow = new QHBoxLayout;
    m_algorithm = new QComboBox(recipeBox);
    m_algorithm->setObjectName(QStringLiteral("algorithm"));
    m_algorithm->addItem(presetText(), QString());
    m_algorithm->addItem(tr("max (RTN weights, max-calibrated inputs)"), QStringLiteral("max"));
    m_algorithm->addItem(tr("SmoothQuant"), QStringLiteral("smoothquant"));
    m_algorithm->addItem(tr("AWQ"), QStringLiteral("awq"));
    m_algorithm->addItem(tr("GPTQ"), QStringLiteral("gptq"));
    m_algorithm->setToolTip(tr("How weights are chosen. SmoothQuant moves activation outliers into the weights "
                               "(x·s⁻¹, W·s, α balances them); AWQ searches per-channel scales that protect salient "
                               "weights; GPTQ rounds column by column and corrects the rest with the inverse Hessian."));
    m_alpha = new QDoubleSpinBox(recipeBox);
    m_alpha->setObjectName(QStringLiteral("alpha"));
    m_alpha->setRange(0.0, 1.0);
    m_alpha->setSingleStep(0.05);
    m_alpha->setValue(0.5);
    m_alpha->setPrefix(tr("α "));
    m_alpha->setToolTip(tr("SmoothQuant migration strength: s = max|x|^α / max|W|^(1−α). 0.5 is the paper's default; "
                           "more outliers in the activations want a larger α."));
    algoRow->addWidget(m_algorithm, 1);
    algoRow->addWidget(m_alpha);
    form->addRow(tr("PTQ algorithm"), algoRow);
    m_kvCache = new QComboBox(recipeBox);
    m_kvCache->setObjectName(QStringLiteral("kvCache"));
    m_kvCache->addItem(presetText(), QString());
    m_kvCache->addItem(tr("off (16-bit cache)"), QStringLiteral("none"));
    const std::pair<const char*, const char*> kvFormats[] = {
        {"fp8", "FP8 E4M3, calibrated amax (Model Optimizer fp8)"},
        {"fp8_cast", "FP8 E4M3 cast, amax 448 (fp8_cast)"},
        {"fp8_head", "FP8 E4M3, amax per KV head"},
        {"nvfp4", "NVFP4, 16 along head_dim (nvfp4)"},
        {"nvfp4_cast", "NVFP4, constant amax (nvfp4_cast)"},
        {"nvfp4_rotate", "NVFP4 with Q/K Hadamard (nvfp4_rotate)"},
        {"int8", "INT8, calibrated amax"},
        {"int8_head", "INT8, amax per KV head"},
        {"int4", "INT4, groups along head_dim"}};
    for (const auto& [name, label] : kvFormats) m_kvCache->addItem(tr(label), QString::fromLatin1(name));
    m_kvCache->setToolTip(tr("KV-cache format of every attention layer: keys after RoPE and values are fake-quantized "
                             "as the cache would store them, in calibration, evaluation and training alike. The "
                             "names are Model Optimizer's --kv_cache_qformat values; k_scale / v_scale = amax / 448 "
                             "go into the hf-modelopt export. Encoders (BERT) have no KV cache."));
    form->addRow(tr("KV cache"), m_kvCache);
    m_rotation = new QComboBox(recipeBox);
    m_rotation->setObjectName(QStringLiteral("rotation"));
    m_rotation->addItem(presetText(), QString());
    m_rotation->addItem(tr("none"), QStringLiteral("none"));
    m_rotation->addItem(tr("Hadamard (QuaRot: R1 residual, R2 heads, R4 down_proj)"), QStringLiteral("hadamard"));
    m_rotation->addItem(tr("RHT (Model Optimizer rotate-before-quantize)"), QStringLiteral("rht"));
    m_rotation->setToolTip(tr("Orthogonal Hadamard rotations that leave the full-precision model unchanged but spread "
                              "outliers before quantization. Hadamard fuses R1 (residual stream, RMSNorm folded first) "
                              "and R2 (per head, V/O) into the weights and rotates down_proj's input online; RHT "
                              "rotates every quantized layer's input and weight blockwise. Online rotations export "
                              "as fakequant only (folded); the What-if view shows what they change."));
    form->addRow(tr("Rotation"), m_rotation);
    auto* calRow = new QHBoxLayout;
    m_calibration = new QLineEdit(QStringLiteral("synthetic:arith"), recipeBox);
    m_calibration->setObjectName(QStringLiteral("calibration"));
    m_calibration->setToolTip(tr("Calibration data: a text file, a pre-tokenized file or a built-in spec such as "
                                 "synthetic:arith (docs/DATA.md). Its training split is used."));
    m_calibrationSamples = new QSpinBox(recipeBox);
    m_calibrationSamples->setObjectName(QStringLiteral("calibrationSamples"));
    m_calibrationSamples->setRange(0, 100000);
    m_calibrationSamples->setSpecialValueText(tr("preset's"));
    m_calibrationSamples->setSuffix(tr(" samples"));
    m_calibrationSamples->setToolTip(tr("Calibration examples (0 = the preset's, usually 128)."));
    calRow->addWidget(m_calibration, 1);
    calRow->addWidget(m_calibrationSamples);
    form->addRow(tr("Calibration"), calRow);
    m_device = new QComboBox(recipeBox);
    m_device->setObjectName(QStringLiteral("device"));
    for (const std::string& device : available_compute_devices()) m_device->addItem(QString::fromStdString(device));
    m_device->setToolTip(m_device->count() > 1
                             ? tr("Where the run computes: the model, its data, calibration and training on the CPU or on one "
                                  "CUDA GPU (docs/CLI.md \"Devices\")")
                             : tr("Where the run computes. Only the CPU here: this build's LibTorch has no CUDA, QuantLab's "
                                  "CUDA kernels are not built in, or no GPU is visible (docs/CLI.md \"Devices\")"));
    form->addRow(tr("Device"), m_device);
    m_precision = new QComboBox(recipeBox);
    m_precision->setObjectName(QStringLiteral("precision"));
    m_precision->addItem(tr("FP32"), QStringLiteral("fp32"));
    m_precision->addItem(tr("BF16 autocast"), QStringLiteral("bf16"));
    m_precision->setToolTip(tr("QAT and QAD on a GPU: BF16 autocast runs the matmuls in bfloat16 with float32 master "
                               "weights, as mixed-precision training does; the fake quantizers and the evaluation stay "
                               "float32. The CPU trains in FP32 only (docs/TRAINING.md \"Devices and precision\")."));
    form->addRow(tr("Precision"), m_precision);
    connect(m_device, &QComboBox::currentIndexChanged, this, &RecipeEditor::updateMethodFields);
    m_evalPairs = new QLineEdit(recipeBox);
    m_evalPairs->setObjectName(QStringLiteral("evalPairs"));
    m_evalPairs->setPlaceholderText(tr("optional: sentence1<TAB>sentence2<TAB>score per line"));
    m_evalPairs->setToolTip(tr("Sentence encoders: a pairs file (e.g. tests/data/sentences/pairs.tsv). Every run then also "
                               "reports the Spearman correlation of the embeddings' cosine with the pairs' scores, for "
                               "the quantized model and the FP teacher (docs/DATA.md \"Sentences\")."));
    m_evalPairsLabel = new QLabel(tr("Eval pairs"), recipeBox);
    form->addRow(m_evalPairsLabel, m_evalPairs);
    m_evalPairsLabel->setVisible(false);
    m_evalPairs->setVisible(false);
    m_overrides = new QLabel(recipeBox);
    m_overrides->setObjectName(QStringLiteral("overrides"));
    m_overrides->setWordWrap(true);
    m_overrides->setToolTip(tr("Per-layer formats chosen in the model panel (right-click a layer)."));
    form->addRow(tr("Layer overrides"), m_overrides);
    layout->addWidget(recipeBox);

    m_lora = new QGroupBox(tr("LoRA adapter"), body);
    m_lora->setObjectName(QStringLiteral("loraGroup"));
    auto* lform = new QFormLayout(m_lora);
    m_loraBase = new QLabel(m_lora);
    m_loraBase->setObjectName(QStringLiteral("loraBase"));
    m_loraBase->setWordWrap(true);
    m_loraBase->setToolTip(tr("The frozen base: the model quantized by the recipe above (its weight format). It never "
                              "changes; only the adapters train."));
    lform->addRow(tr("Base"), m_loraBase);
    m_loraRank = new QSpinBox(m_lora);
    m_loraRank->setObjectName(QStringLiteral("loraRank"));
    m_loraRank->setRange(1, 4096);
    m_loraRank->setValue(8);
    m_loraRank->setToolTip(tr("r: the adapters' rank (A is r x in, B is out x r)."));
    lform->addRow(tr("Rank"), m_loraRank);
    m_loraAlpha = new QDoubleSpinBox(m_lora);
    m_loraAlpha->setObjectName(QStringLiteral("loraAlpha"));
    m_loraAlpha->setRange(0.01, 100000.0);
    m_loraAlpha->setValue(16.0);
    m_loraAlpha->setToolTip(tr("lora_alpha: the update is scaled by alpha / r (PEFT's convention)."));
    lform->addRow(tr("Alpha"), m_loraAlpha);
    m_loraDropout = new QDoubleSpinBox(m_lora);
    m_loraDropout->setObjectName(QStringLiteral("loraDropout"));
    m_loraDropout->setRange(0.0, 0.95);
    m_loraDropout->setSingleStep(0.05);
    m_loraDropout->setToolTip(tr("Dropout on the adapters' input while training."));
    lform->addRow(tr("Dropout"), m_loraDropout);
    m_loraTargets = new QLineEdit(QStringLiteral("all-linear"), m_lora);
    m_loraTargets->setObjectName(QStringLiteral("loraTargets"));
    m_loraTargets->setToolTip(tr("Comma-separated module names or globs (q_proj,v_proj or *mlp*); all-linear = every Linear "
                                 "layer but the output head, as PEFT's."));
    lform->addRow(tr("Targets"), m_loraTargets);
    m_loraInit = new QComboBox(m_lora);
    m_loraInit->setObjectName(QStringLiteral("loraInit"));
    m_loraInit->addItem(tr("default (B = 0, as PEFT)"), QStringLiteral("default"));
    m_loraInit->addItem(tr("LoftQ (Q + sBA ≈ W)"), QStringLiteral("loftq"));
    m_loraInit->setToolTip(tr("LoftQ alternates quantizing the base and a rank-r SVD of the residual, so training starts "
                              "closer to the full-precision weights."));
    lform->addRow(tr("Init"), m_loraInit);
    m_loraLoss = new QComboBox(m_lora);
    m_loraLoss->setObjectName(QStringLiteral("loraLoss"));
    m_loraLoss->addItem(tr("SFT (task loss)"), QStringLiteral("sft"));
    m_loraLoss->addItem(tr("KL to the FP model (LoRA-QAD)"), QStringLiteral("kl"));
    m_loraLoss->setToolTip(tr("SFT fine-tunes on the data; KL distils the full-precision model into the adapters, "
                              "recovering what quantizing the base lost."));
    lform->addRow(tr("Loss"), m_loraLoss);
    layout->addWidget(m_lora);

    m_training = new QGroupBox(tr("Training"), body);
    auto* tform = new QFormLayout(m_training);
    m_trainData = new QLineEdit(QStringLiteral("synthetic:arith"), m_training);
    m_trainData->setObjectName(QStringLiteral("trainData"));
    m_trainData->setToolTip(tr("Training data (docs/DATA.md). QAD learns from the teacher's outputs, so even data from "
                               "another domain works (synthetic:arith:+ trains on addition only)."));
    tform->addRow(tr("Data"), m_trainData);
    m_evalData = new QLineEdit(m_training);
    m_evalData->setObjectName(QStringLiteral("evalData"));
    m_evalData->setPlaceholderText(tr("validation split of the training data"));
    m_evalData->setToolTip(tr("Held-out data for the eval curves (empty: the training data's validation split)."));
    tform->addRow(tr("Eval data"), m_evalData);
    auto* stepsRow = new QVBoxLayout;
    m_steps = new QSpinBox(m_training);
    m_steps->setObjectName(QStringLiteral("steps"));
    m_steps->setRange(1, 10000000);
    m_steps->setValue(300);
    m_steps->setToolTip(tr("Optimizer steps. The planner's suggestion is shown below."));
    m_planner = new QLabel(m_training);
    m_planner->setObjectName(QStringLiteral("planner"));
    m_planner->setWordWrap(true);
    m_planner->setTextFormat(Qt::RichText);
    stepsRow->addWidget(m_steps);
    stepsRow->addWidget(m_planner);
    tform->addRow(tr("Steps"), stepsRow);
    m_batch = new QSpinBox(m_training);
    m_batch->setObjectName(QStringLiteral("batch"));
    m_batch->setRange(1, 65536);
    m_batch->setValue(64);
    m_batch->setToolTip(tr("Sequences per step."));
    tform->addRow(tr("Batch size"), m_batch);
    m_lr = new QDoubleSpinBox(m_training);
    m_lr->setObjectName(QStringLiteral("lr"));
    m_lr->setDecimals(7);
    m_lr->setRange(1e-7, 1.0);
    m_lr->setSingleStep(1e-5);
    m_lr->setValue(1e-4);
    m_lr->setToolTip(tr("Peak learning rate (AdamW). QAT/QAD after PTQ want a small one: 1e-5 … 1e-4."));
    tform->addRow(tr("Learning rate"), m_lr);
    m_schedule = new QComboBox(m_training);
    m_schedule->setObjectName(QStringLiteral("schedule"));
    for (const char* s : {"cosine", "linear", "constant", "wsd"}) m_schedule->addItem(QString::fromLatin1(s));
    m_schedule->setToolTip(tr("LR schedule after warm-up. wsd = warmup-stable-decay (decay over the last 20 %)."));
    tform->addRow(tr("Schedule"), m_schedule);
    m_warmup = new QSpinBox(m_training);
    m_warmup->setObjectName(QStringLiteral("warmup"));
    m_warmup->setRange(0, 1000000);
    m_warmup->setToolTip(tr("Linear warm-up steps."));
    tform->addRow(tr("Warm-up"), m_warmup);
    m_fpSteps = new QSpinBox(m_training);
    m_fpSteps->setObjectName(QStringLiteral("fpSteps"));
    m_fpSteps->setRange(0, 10000000);
    m_fpSteps->setToolTip(tr("Cooldown fusion (QAT only): train this many steps in full precision first, then quantize "
                             "and run QAT while the LR decays (QAT.md)."));
    tform->addRow(tr("FP steps first"), m_fpSteps);
    m_evalEvery = new QSpinBox(m_training);
    m_evalEvery->setObjectName(QStringLiteral("evalEvery"));
    m_evalEvery->setRange(0, 1000000);
    m_evalEvery->setValue(50);
    m_evalEvery->setSpecialValueText(tr("start and end"));
    m_evalEvery->setToolTip(tr("Evaluate every this many steps (eval curves on the dashboard)."));
    tform->addRow(tr("Eval every"), m_evalEvery);
    m_temperature = new QDoubleSpinBox(m_training);
    m_temperature->setObjectName(QStringLiteral("temperature"));
    m_temperature->setRange(0.1, 20.0);
    m_temperature->setValue(1.0);
    m_temperature->setToolTip(tr("QAD: softmax temperature of teacher and student in the KL loss (1 = the plain "
                                 "distributions, as Model Optimizer's QAD)."));
    tform->addRow(tr("Temperature"), m_temperature);
    m_ceWeight = new QDoubleSpinBox(m_training);
    m_ceWeight->setObjectName(QStringLiteral("ceWeight"));
    m_ceWeight->setRange(0.0, 1.0);
    m_ceWeight->setSingleStep(0.1);
    m_ceWeight->setToolTip(tr("QAD: share of the task cross-entropy in the loss (0 = pure distillation)."));
    tform->addRow(tr("CE weight"), m_ceWeight);
    m_lsq = new QCheckBox(tr("Learn the scales (LSQ)"), m_training);
    m_lsq->setObjectName(QStringLiteral("lsq"));
    m_lsq->setToolTip(tr("Learned step size quantization for symmetric integer weights (Esser et al. 2019)."));
    tform->addRow(QString(), m_lsq);
    m_seed = new QSpinBox(m_training);
    m_seed->setObjectName(QStringLiteral("seed"));
    m_seed->setRange(0, 1 << 30);
    m_seed->setToolTip(tr("Seed of the data order (synthetic data) and of anything random."));
    tform->addRow(tr("Seed"), m_seed);
    layout->addWidget(m_training);

    m_validation = new QLabel(body);
    m_validation->setObjectName(QStringLiteral("recipeValidation"));
    m_validation->setWordWrap(true);
    m_validation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_validation);

    auto* jsonToggle = new QToolButton(body);
    jsonToggle->setText(tr("Recipe JSON"));
    jsonToggle->setCheckable(true);
    jsonToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    jsonToggle->setArrowType(Qt::RightArrow);
    layout->addWidget(jsonToggle);
    m_jsonView = new QPlainTextEdit(body);
    m_jsonView->setObjectName(QStringLiteral("recipeJson"));
    m_jsonView->setReadOnly(true);
    m_jsonView->setFont(QFont(QStringLiteral("monospace")));
    m_jsonView->setMinimumHeight(200);
    m_jsonView->setVisible(false);
    layout->addWidget(m_jsonView);
    connect(jsonToggle, &QToolButton::toggled, this, [this, jsonToggle](bool on) {
        m_jsonView->setVisible(on);
        jsonToggle->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
    layout->addStretch(1);

    connect(m_preset, &QComboBox::currentIndexChanged, this, &RecipeEditor::onPresetChanged);
    connect(m_method, &QComboBox::currentIndexChanged, this, [this] {
        updateMethodFields();
        recompose();
    });
    for (QComboBox* c : {m_weightFormat, m_granularity, m_inputFormat, m_algorithm, m_schedule, m_kvCache, m_rotation,
                         m_loraInit, m_loraLoss})
        connect(c, &QComboBox::currentIndexChanged, this, &RecipeEditor::recompose);
    for (QSpinBox* s : {m_groupSize, m_calibrationSamples, m_steps, m_batch, m_warmup, m_fpSteps, m_evalEvery, m_seed, m_loraRank})
        connect(s, &QSpinBox::valueChanged, this, &RecipeEditor::recompose);
    for (QDoubleSpinBox* s : {m_alpha, m_lr, m_temperature, m_ceWeight, m_loraAlpha, m_loraDropout})
        connect(s, &QDoubleSpinBox::valueChanged, this, &RecipeEditor::recompose);
    for (QLineEdit* e : {m_calibration, m_trainData, m_evalData, m_evalPairs, m_loraTargets})
        connect(e, &QLineEdit::textChanged, this, &RecipeEditor::recompose);
    connect(m_lsq, &QCheckBox::toggled, this, &RecipeEditor::recompose);
}

bool RecipeEditor::applyQuickStart(const QString& name) {
    for (const QuickStart& q : kQuickStarts) {
        if (name != QLatin1String(q.name)) continue;
        m_blockSignals = true;
        setPreset(QString::fromLatin1(q.preset));
        m_weightFormat->setCurrentIndex(0);
        m_inputFormat->setCurrentIndex(0);
        m_granularity->setCurrentIndex(0);
        m_algorithm->setCurrentIndex(0);
        m_kvCache->setCurrentIndex(0);
        m_rotation->setCurrentIndex(0);
        setMethod(q.method);
        m_blockSignals = false;
        recompose();
        emit quickStartApplied(name);
        return true;
    }
    return false;
}

bool RecipeEditor::setPreset(const QString& preset) {
    const int i = m_preset->findText(preset);
    if (i < 0) return false;
    m_preset->setCurrentIndex(i);
    return true;
}

QString RecipeEditor::preset() const { return m_preset->currentText(); }

void RecipeEditor::setMethod(RunSetup::Method m) {
    m_method->setCurrentIndex(m_method->findData(static_cast<int>(m)));
}

RunSetup::Method RecipeEditor::method() const {
    return static_cast<RunSetup::Method>(m_method->currentData().toInt());
}

void RecipeEditor::setSteps(int steps) { m_steps->setValue(steps); }
void RecipeEditor::setEvalEvery(int steps) { m_evalEvery->setValue(steps); }

void RecipeEditor::setWeightFormat(const QString& format) {
    const int i = m_weightFormat->findData(format);
    if (i >= 0) m_weightFormat->setCurrentIndex(i);
}

void RecipeEditor::setModelFacts(qint64 parameters, double fpTokens, qint64 tokensPerSequence, bool isDemo) {
    m_parameters = parameters;
    m_fpTokens = fpTokens;
    m_tokensPerSequence = std::max<qint64>(1, tokensPerSequence);
    if (!isDemo) {
        // Synthetic tasks only fit the demo's character vocabulary: ask for real data instead.
        for (QLineEdit* e : {m_calibration, m_trainData})
            if (e->text().startsWith(QLatin1String("synthetic:"))) e->clear();
        m_calibration->setPlaceholderText(tr("a text file (docs/DATA.md)"));
        m_trainData->setPlaceholderText(tr("a text file (docs/DATA.md)"));
    } else {
        for (QLineEdit* e : {m_calibration, m_trainData})
            if (e->text().isEmpty()) e->setText(QStringLiteral("synthetic:arith"));
    }
    recompose();
}

void RecipeEditor::setEncoder(bool encoder) {
    m_encoder = encoder;
    m_evalPairsLabel->setVisible(encoder);
    m_evalPairs->setVisible(encoder);
    const QString sentences = tr("sentences: a text file, one per line (docs/DATA.md)");
    if (encoder) {
        m_calibration->setPlaceholderText(sentences);
        m_trainData->setPlaceholderText(sentences);
    }
    // An encoder's QAT trains its contrastive loss (docs/TRAINING.md "Sentence encoders"); the
    // tooltip says so, since it is not the cross-entropy a decoder's QAT trains.
    if (auto* model = qobject_cast<QStandardItemModel*>(m_method->model())) {
        QStandardItem* qat = model->item(m_method->findData(static_cast<int>(RunSetup::Method::Qat)));
        if (qat)
            qat->setToolTip(encoder ? tr("QAT of a sentence encoder trains the in-batch contrastive loss of each sentence "
                                         "against a copy with 15 % of its tokens deleted (sentence-transformers' "
                                         "MultipleNegativesRankingLoss); QAD matches the FP embeddings instead")
                                    : QString());
    }
    recompose();
}

void RecipeEditor::setLayerFormat(const QString& layer, const QString& format) {
    if (format.isEmpty())
        m_choices.layerFormats.remove(layer);
    else
        m_choices.layerFormats.insert(layer, format);
    recompose();
}

void RecipeEditor::onPresetChanged() {
    recompose();
}

void RecipeEditor::updateMethodFields() {
    const RunSetup::Method m = method();
    m_training->setVisible(m != RunSetup::Method::Ptq);
    m_lora->setVisible(m == RunSetup::Method::Lora);
    m_temperature->setEnabled(m == RunSetup::Method::Qad || m == RunSetup::Method::Lora);
    m_ceWeight->setEnabled(m == RunSetup::Method::Qad);
    m_fpSteps->setEnabled(m == RunSetup::Method::Qat);
    // BF16 autocast exists for training on CUDA only (train --precision refuses it elsewhere).
    const bool bf16Possible = m != RunSetup::Method::Ptq && m_device->currentText().startsWith(QLatin1String("cuda"));
    if (!bf16Possible) m_precision->setCurrentIndex(0);
    m_precision->setEnabled(bf16Possible);
}

RecipeChoices RecipeEditor::choices() const {
    RecipeChoices c = m_choices;
    c.weightFormat = m_weightFormat->currentData().toString();
    c.weightGranularity = m_granularity->currentData().toString();
    c.groupSize = m_groupSize->value();
    c.inputFormat = m_inputFormat->currentData().toString();
    c.algorithm = m_algorithm->currentData().toString();
    c.smoothquantAlpha = m_alpha->value();
    c.calibrationSamples = m_calibrationSamples->value();
    c.kvCache = m_kvCache->currentData().toString();
    c.rotation = m_rotation->currentData().toString();
    return c;
}

bool RecipeEditor::setKvCache(const QString& name) {
    const int i = m_kvCache->findData(name);
    if (i < 0) return false;
    m_kvCache->setCurrentIndex(i);
    return true;
}

bool RecipeEditor::setRotation(const QString& name) {
    const int i = m_rotation->findData(name);
    if (i < 0) return false;
    m_rotation->setCurrentIndex(i);
    return true;
}

QString RecipeEditor::kvCache() const { return m_kvCache->currentData().toString(); }
QString RecipeEditor::rotation() const { return m_rotation->currentData().toString(); }

void RecipeEditor::recompose() {
    if (m_blockSignals) return;
    m_groupSize->setEnabled(m_granularity->currentData().toString() == QLatin1String("group"));
    m_alpha->setEnabled(m_algorithm->currentData().toString() == QLatin1String("smoothquant"));
    const RecipeChoices c = choices();
    QStringList overrides;
    for (auto it = c.layerFormats.cbegin(); it != c.layerFormats.cend(); ++it)
        overrides << QStringLiteral("%1 → %2").arg(it.key(), it.value() == QLatin1String("off") ? tr("BF16 (off)") : it.value());
    m_overrides->setText(overrides.isEmpty() ? tr("none (right-click a layer in the model panel)") : overrides.join(QLatin1Char('\n')));
    const bool modified = !c.weightFormat.isEmpty() || !c.weightGranularity.isEmpty() || !c.inputFormat.isEmpty() ||
                          !c.algorithm.isEmpty() || c.calibrationSamples > 0 || !c.layerFormats.isEmpty() ||
                          !c.kvCache.isEmpty() || !c.rotation.isEmpty();
    m_name = preset() + (modified ? QStringLiteral("+custom") : QString());
    try {
        m_json = composeRecipe(m_presetJson.value(preset()), m_name, c);
        m_problem.clear();
    } catch (const std::exception& e) {
        m_json.clear();
        m_problem = QString::fromUtf8(e.what());
    }
    m_jsonView->setPlainText(m_problem.isEmpty() ? m_json : m_problem);
    const QString format = c.weightFormat.isEmpty() ? tr("the %1 preset's weight format").arg(preset()) : c.weightFormat;
    m_loraBase->setText(tr("the model quantized by this recipe (%1), frozen").arg(format));
    updatePlanner();
    emit changed();
}

void RecipeEditor::updatePlanner() {
    if (method() == RunSetup::Method::Ptq) return;
    if (m_parameters <= 0) {
        m_planner->setText(tr("<i>QAT planner: open a model to see its suggestion.</i>"));
        return;
    }
    const double tokensPerStep = static_cast<double>(m_batch->value()) * static_cast<double>(m_tokensPerSequence);
    const double qatTokens = tokensPerStep * m_steps->value();
    if (m_fpTokens <= 0) {
        m_planner->setText(tr("<i>QAT planner: the FP training tokens of this model are unknown; "
                              "use <tt>quantlab-cli plan</tt> with your numbers.</i>"));
        return;
    }
    try {
        QatPlanInput in;
        in.parameters = m_parameters;
        const QString wf = m_weightFormat->currentData().toString();
        in.bits = wf.contains(QLatin1String("8")) ? 8 : 4;
        in.total_tokens = m_fpTokens + qatTokens;
        const QatPlan plan = plan_qat(in);
        // q / (D_fp + q) = f  ⇔  q = f·D_fp / (1 − f): the QAT steps that make this run's share f.
        const double f = plan.optimal_qat_fraction;
        const double suggested = f < 1 ? f * m_fpTokens / (1 - f) / tokensPerStep : 0;
        m_planner->setText(tr("QAT planner (Dremov et al. 2025): S = %1 tokens/param-byte → optimal QAT share "
                              "f̂ = %2 (±%3) of all tokens ⇒ about <b>%4 steps</b> here; this run: %5 %.")
                               .arg(plan.tokens_per_parameter_byte, 0, 'g', 3)
                               .arg(f, 0, 'f', 3)
                               .arg(kQatFractionLawMae, 0, 'f', 2)
                               .arg(std::llround(std::max(1.0, suggested)))
                               .arg(100.0 * qatTokens / in.total_tokens, 0, 'f', 2));
        m_planner->setToolTip(QString::fromStdString(plan.source));
    } catch (const std::exception& e) {
        m_planner->setText(tr("<i>QAT planner: %1</i>").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
    }
}

QString RecipeEditor::recipeJson() const { return m_json; }
QString RecipeEditor::setupCalibration() const { return m_calibration->text().trimmed(); }
void RecipeEditor::setCalibration(const QString& spec) { m_calibration->setText(spec); }
void RecipeEditor::setEvalPairs(const QString& path) { m_evalPairs->setText(path); }

void RecipeEditor::setValidationMessage(const QString& text, bool isError) {
    m_validation->setText(text);
    m_validation->setStyleSheet(isError ? QStringLiteral("color: #d9534f;") : QStringLiteral("color: #2b8a3e;"));
}

RunSetup RecipeEditor::setup() const {
    if (!m_problem.isEmpty()) throw std::runtime_error(m_problem.toStdString());
    RunSetup s;
    s.method = method();
    s.presetName = preset();
    s.recipeName = m_name;
    s.recipeJson = m_json;
    s.calibration = m_calibration->text().trimmed();
    s.calibrationSamples = m_calibrationSamples->value();
    s.trainData = m_trainData->text().trimmed();
    s.evalData = m_evalData->text().trimmed();
    s.evalPairs = m_encoder ? m_evalPairs->text().trimmed() : QString();
    s.steps = m_steps->value();
    s.batchSize = m_batch->value();
    s.evalEvery = m_evalEvery->value();
    s.lr = m_lr->value();
    s.temperature = m_temperature->value();
    s.ceWeight = m_ceWeight->value();
    s.schedule = m_schedule->currentText();
    s.warmupSteps = m_warmup->value();
    s.fpSteps = s.method == RunSetup::Method::Qat ? m_fpSteps->value() : 0;
    s.learnedScales = m_lsq->isChecked();
    s.seed = static_cast<quint64>(m_seed->value());
    s.device = m_device->currentText();
    s.precision = m_precision->isEnabled() ? m_precision->currentData().toString() : QStringLiteral("fp32");
    s.loraRank = m_loraRank->value();
    s.loraAlpha = m_loraAlpha->value();
    s.loraDropout = m_loraDropout->value();
    s.loraTargets = m_loraTargets->text().trimmed();
    s.loraInit = m_loraInit->currentData().toString();
    s.loraLoss = m_loraLoss->currentData().toString();
    if (s.calibration.isEmpty()) throw std::runtime_error(tr("Calibration data is empty: give a text file or a spec (docs/DATA.md).").toStdString());
    if (s.method != RunSetup::Method::Ptq && s.trainData.isEmpty())
        throw std::runtime_error(tr("Training data is empty: give a text file or a spec (docs/DATA.md).").toStdString());
    return s;
}

}  // namespace ql
