// SPDX-License-Identifier: GPL-3.0-or-later
// A list of the project's quantized runs, each with a check box, as the Generate and Evaluation
// views offer them beside the open model: one way to fill it and to tick a run, so both views
// keep a user's ticks the same way when the project's runs change.
#pragma once

#include <QList>
#include <QString>

class QListWidget;

namespace ql {

struct RunCandidate {
    QString label;  // shown
    QString path;   // the run's model folder: the key ticks are kept by
};

// Refills `list` with `candidates`, keeping ticked the paths that were ticked; with no candidates
// one disabled line says `emptyText`. The items belong to `list`.
void fillRunChecklist(QListWidget* list, const QList<RunCandidate>& candidates, const QString& emptyText);

// Ticks (or unticks) the item of `path`; false when no item has that path.
bool checkRun(QListWidget* list, const QString& path, bool checked);

}  // namespace ql
