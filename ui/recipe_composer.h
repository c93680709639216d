// SPDX-License-Identifier: GPL-3.0-or-later
// Composes a recipe from a preset and the editor's choices: a different weight or activation
// format, granularity, group size, PTQ algorithm, calibration size and per-layer overrides (mixed
// precision). The preset's own disable list (lm_head, routers …) keeps working because formats
// are changed in the entries that enable quantizers, and per-layer overrides come last, exactly as
// a user would write them by hand (docs/RECIPES.md: later entries override earlier ones).
#pragma once

#include <QMap>
#include <QString>

namespace ql {

struct RecipeChoices {
    QString weightFormat;        // "" = the preset's
    QString weightGranularity;   // "" = the format's default / the preset's; "tensor", "channel", "group"
    int groupSize = 0;           // with granularity "group"
    QString inputFormat;         // "" = the preset's, "off" = weight-only
    QString algorithm;           // "" = the preset's; "max", "smoothquant", "awq", "gptq"
    double smoothquantAlpha = 0.5;
    int calibrationSamples = 0;  // 0 = the preset's
    QMap<QString, QString> layerFormats;  // layer -> format, or "off" for high precision
    // The recipe's kv_cache / rotation sections (docs/RECIPES.md): a KV-cache preset name (fp8,
    // nvfp4 ... as `--kv-cache` takes them) and a rotation (hadamard, rht); "" = the preset's,
    // "none" = none.
    QString kvCache;
    QString rotation;
};

// Returns the composed recipe JSON (indented) or throws std::runtime_error with a message naming
// what could not be applied. `presetJson` is the preset's canonical JSON.
QString composeRecipe(const QString& presetJson, const QString& name, const RecipeChoices& choices);

}  // namespace ql
