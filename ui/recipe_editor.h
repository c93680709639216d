// SPDX-License-Identifier: GPL-3.0-or-later
// The recipe editor: a preset, the method (PTQ, QAT, QAD, LoRA / QLoRA on the recipe's frozen base), the format and its granularity, the PTQ
// algorithm, calibration, the training hyper-parameters with the QAT planner's suggestion beside
// the step count, and per-layer format overrides that the model panel sets (mixed precision).
// Every field has a default that runs and a tooltip that says what it does. Produces a RunSetup.
#pragma once

#include <QMap>
#include <QString>
#include <QWidget>

#include "ui/recipe_composer.h"
#include "ui/run_setup.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace ql {

class RecipeEditor : public QWidget {
    Q_OBJECT
public:
    explicit RecipeEditor(QWidget* parent = nullptr);

    // The quick starts shown as buttons: "NVFP4 PTQ", "NVFP4 QAT", "NVFP4 QAD" …
    QStringList quickStarts() const;
    bool applyQuickStart(const QString& name);
    bool setPreset(const QString& preset);
    QString preset() const;
    void setMethod(RunSetup::Method m);
    RunSetup::Method method() const;
    void setSteps(int steps);
    void setEvalEvery(int steps);
    void setWeightFormat(const QString& format);  // "" = the preset's
    // The KV-cache format (a --kv-cache name: fp8, nvfp4 ...; "none"; "" = the preset's) and the
    // rotation (hadamard, rht, "none", ""), e.g. from the what-if view. False for unknown names.
    bool setKvCache(const QString& name);
    bool setRotation(const QString& name);
    QString kvCache() const;
    QString rotation() const;

    // The model the recipe is for: parameter count and the tokens it was trained on (0 =
    // unknown), for the QAT planner; data defaults for the built-in demo.
    void setModelFacts(qint64 parameters, double fpTokens, qint64 tokensPerSequence, bool isDemo);
    // A sentence encoder (BERT, sentence-transformers): data are sentences, one per line; the
    // eval-pairs field appears; QAT (no task loss) is unavailable.
    void setEncoder(bool encoder);
    bool isEncoder() const { return m_encoder; }

    // Mixed precision from the model panel: a format for one layer, "off" to keep it in high
    // precision, "" to follow the recipe again.
    void setLayerFormat(const QString& layer, const QString& format);
    QMap<QString, QString> layerFormats() const { return m_choices.layerFormats; }

    // The composed run, or a std::runtime_error naming the problem.
    RunSetup setup() const;
    QString recipeJson() const;  // "" when it cannot be composed (see problem())
    QString setupCalibration() const;  // the calibration data field
    void setCalibration(const QString& spec);
    void setEvalPairs(const QString& path);  // encoders' pairs file (see setEncoder)
    QString problem() const { return m_problem; }
    // Shown under the editor: a recipe the engine rejected for this model (empty clears).
    void setValidationMessage(const QString& text, bool isError);

signals:
    void changed();              // any field; the recipe JSON may differ
    void quickStartApplied(const QString& name);

private:
    void buildUi();
    void onPresetChanged();
    void updateMethodFields();
    void updatePlanner();
    void recompose();
    RecipeChoices choices() const;

    QMap<QString, QString> m_presetJson;  // preset name -> canonical JSON
    RecipeChoices m_choices;               // only layerFormats is kept here; the rest is read from widgets
    QString m_json, m_problem, m_name;
    qint64 m_parameters = 0, m_tokensPerSequence = 64;
    double m_fpTokens = 0;
    bool m_blockSignals = false;
    bool m_encoder = false;

    QComboBox* m_preset = nullptr;
    QComboBox* m_method = nullptr;
    QComboBox* m_weightFormat = nullptr;
    QComboBox* m_granularity = nullptr;
    QSpinBox* m_groupSize = nullptr;
    QComboBox* m_inputFormat = nullptr;
    QComboBox* m_algorithm = nullptr;
    QComboBox* m_kvCache = nullptr;
    QComboBox* m_rotation = nullptr;
    QComboBox* m_device = nullptr;
    QComboBox* m_precision = nullptr;
    QDoubleSpinBox* m_alpha = nullptr;
    QLineEdit* m_calibration = nullptr;
    QSpinBox* m_calibrationSamples = nullptr;
    QLabel* m_evalPairsLabel = nullptr;
    QLineEdit* m_evalPairs = nullptr;
    QGroupBox* m_training = nullptr;
    QLineEdit* m_trainData = nullptr;
    QLineEdit* m_evalData = nullptr;
    QSpinBox* m_steps = nullptr;
    QLabel* m_planner = nullptr;
    QSpinBox* m_batch = nullptr;
    QDoubleSpinBox* m_lr = nullptr;
    QComboBox* m_schedule = nullptr;
    QSpinBox* m_warmup = nullptr;
    QSpinBox* m_fpSteps = nullptr;
    QSpinBox* m_evalEvery = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QDoubleSpinBox* m_ceWeight = nullptr;
    QCheckBox* m_lsq = nullptr;
    QSpinBox* m_seed = nullptr;
    QGroupBox* m_lora = nullptr;
    QSpinBox* m_loraRank = nullptr;
    QDoubleSpinBox* m_loraAlpha = nullptr;
    QDoubleSpinBox* m_loraDropout = nullptr;
    QLineEdit* m_loraTargets = nullptr;
    QComboBox* m_loraInit = nullptr;
    QComboBox* m_loraLoss = nullptr;
    QLabel* m_loraBase = nullptr;
    QLabel* m_overrides = nullptr;
    QLabel* m_validation = nullptr;
    QPlainTextEdit* m_jsonView = nullptr;
};

}  // namespace ql
