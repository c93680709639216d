// SPDX-License-Identifier: GPL-3.0-or-later
// Combo boxes that list names the user chose or the file system made (runs, checkpoints, model
// folders deep in a venv) are as wide as `characters` characters, not as their longest item:
// sized by their contents, one long run name widened its view past a 1600-pixel window (the
// Layer Inspector's Depth and Tokens tabs with a MiniLM run). The popup still shows whole names.
#pragma once

#include <QComboBox>

namespace ql {

inline void limitComboWidth(QComboBox* combo, int characters) {
    combo->setMinimumContentsLength(characters);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
}

}  // namespace ql
