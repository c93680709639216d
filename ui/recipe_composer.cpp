// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/recipe_composer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <stdexcept>
#include <utility>

namespace ql {
namespace {

QJsonObject formatCfg(const QString& format, const QString& granularity, int groupSize) {
    QJsonObject cfg{{QStringLiteral("format"), format}};
    if (!granularity.isEmpty()) cfg.insert(QStringLiteral("granularity"), granularity);
    if (granularity == QLatin1String("group") && groupSize > 0) cfg.insert(QStringLiteral("group_size"), groupSize);
    return cfg;
}

}  // namespace

QString composeRecipe(const QString& presetJson, const QString& name, const RecipeChoices& c) {
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(presetJson.toUtf8(), &err);
    if (!doc.isObject()) throw std::runtime_error("the preset is not a JSON object: " + err.errorString().toStdString());
    QJsonObject recipe = doc.object();
    recipe.insert(QStringLiteral("name"), name);
    QJsonArray entries = recipe.value(QStringLiteral("quant_cfg")).toArray();
    const bool weightChanged = !c.weightFormat.isEmpty() || !c.weightGranularity.isEmpty();
    for (int i = 0; i < entries.size(); ++i) {
        QJsonObject e = entries[i].toObject();
        const QString pattern = e.value(QStringLiteral("quantizer_name")).toString();
        if (!e.contains(QStringLiteral("cfg"))) continue;
        QJsonObject cfg = e.value(QStringLiteral("cfg")).toObject();
        const bool isWeight = pattern.endsWith(QLatin1String("weight_quantizer"));
        const bool isInput = pattern.endsWith(QLatin1String("input_quantizer"));
        if (isWeight && weightChanged) {
            // A new format replaces the whole cfg: options of the old one (group_size of int4,
            // double_quant of nf4) may not exist for the new one.
            const QString format = c.weightFormat.isEmpty() ? cfg.value(QStringLiteral("format")).toString() : c.weightFormat;
            const QString gran = c.weightGranularity.isEmpty() && c.weightFormat.isEmpty()
                                     ? cfg.value(QStringLiteral("granularity")).toString()
                                     : c.weightGranularity;
            const int group = c.weightGranularity.isEmpty() && c.weightFormat.isEmpty()
                                  ? cfg.value(QStringLiteral("group_size")).toInt()
                                  : c.groupSize;
            cfg = formatCfg(format, gran, group);
        } else if (isInput && c.inputFormat == QLatin1String("off")) {
            e.remove(QStringLiteral("cfg"));
            e.insert(QStringLiteral("enable"), false);
            entries[i] = e;
            continue;
        } else if (isInput && !c.inputFormat.isEmpty()) {
            cfg = QJsonObject{{QStringLiteral("format"), c.inputFormat}};
        } else {
            continue;
        }
        e.insert(QStringLiteral("cfg"), cfg);
        entries[i] = e;
    }
    // An input format for a weight-only preset (INT4_AWQ …): one entry for every input quantizer,
    // placed before the preset's disable list so lm_head and friends stay off.
    bool hasInputEntry = false;
    for (const auto& v : entries)
        if (v.toObject().value(QStringLiteral("quantizer_name")).toString().endsWith(QLatin1String("input_quantizer")) &&
            v.toObject().contains(QStringLiteral("cfg")))
            hasInputEntry = true;
    if (!hasInputEntry && !c.inputFormat.isEmpty() && c.inputFormat != QLatin1String("off")) {
        int at = 0;
        for (int i = 0; i < entries.size(); ++i)
            if (entries[i].toObject().contains(QStringLiteral("cfg"))) at = i + 1;
        entries.insert(at, QJsonObject{{QStringLiteral("quantizer_name"), QStringLiteral("*input_quantizer")},
                                       {QStringLiteral("cfg"), QJsonObject{{QStringLiteral("format"), c.inputFormat}}}});
    }
    for (auto it = c.layerFormats.cbegin(); it != c.layerFormats.cend(); ++it) {
        if (it.value() == QLatin1String("off")) {
            entries.append(QJsonObject{{QStringLiteral("quantizer_name"), it.key() + QStringLiteral(".*")},
                                       {QStringLiteral("enable"), false}});
        } else {
            entries.append(QJsonObject{{QStringLiteral("quantizer_name"), it.key() + QStringLiteral(".weight_quantizer")},
                                       {QStringLiteral("cfg"), QJsonObject{{QStringLiteral("format"), it.value()}}}});
        }
    }
    recipe.insert(QStringLiteral("quant_cfg"), entries);
    if (!c.algorithm.isEmpty()) {
        if (c.algorithm == QLatin1String("max"))
            recipe.insert(QStringLiteral("algorithm"), QStringLiteral("max"));
        else if (c.algorithm == QLatin1String("smoothquant"))
            recipe.insert(QStringLiteral("algorithm"),
                          QJsonObject{{QStringLiteral("method"), c.algorithm}, {QStringLiteral("alpha"), c.smoothquantAlpha}});
        else
            recipe.insert(QStringLiteral("algorithm"), QJsonObject{{QStringLiteral("method"), c.algorithm}});
    }
    // The sections take a preset name as their value (docs/RECIPES.md); "none" drops them.
    for (const auto& [key, value] : {std::pair<QString, QString>{QStringLiteral("kv_cache"), c.kvCache},
                                     std::pair<QString, QString>{QStringLiteral("rotation"), c.rotation}}) {
        if (value == QLatin1String("none"))
            recipe.remove(key);
        else if (!value.isEmpty())
            recipe.insert(key, value);
    }
    if (c.calibrationSamples > 0) {
        QJsonObject cal = recipe.value(QStringLiteral("calibration")).toObject();
        cal.insert(QStringLiteral("samples"), c.calibrationSamples);
        recipe.insert(QStringLiteral("calibration"), cal);
    }
    return QString::fromUtf8(QJsonDocument(recipe).toJson(QJsonDocument::Indented));
}

}  // namespace ql
