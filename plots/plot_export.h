// SPDX-License-Identifier: GPL-3.0-or-later
// Saving QCustomPlot widgets as images and documents, and the entries of the plots' context menus.
#pragma once

#include <QString>

#include <functional>

class QAction;
class QCustomPlot;
class QMenu;
class QObject;
class QWidget;

namespace ql {

// Writes `plot` to `path`; the suffix picks the format: .png (rendered at 2x for sharp slides),
// .svg (vector, through QSvgGenerator) or .pdf. `width`/`height` 0 keep the widget's size.
// Returns an empty string on success, otherwise a message naming the file and the problem.
QString savePlot(QCustomPlot* plot, const QString& path, int width = 0, int height = 0);

// Asks for a file name (remembering the folder in QSettings) and saves `plot` there; errors are
// shown in a message box. Returns the path written, or empty.
QString savePlotInteractively(QCustomPlot* plot, const QString& baseName);

// Adds "Save as PNG/SVG/PDF…" and "Copy data as CSV" to `menu`. `csv` produces the plot's data;
// `baseName` proposes the file name. Errors are shown in a message box parented to `plot`.
void addPlotExportActions(QMenu* menu, QCustomPlot* plot, const QString& baseName,
                          const std::function<QString()>& csv);

// Adds a check box entry `text` to `menu`, ticked when `checked`; picking it calls `toggled`
// with the new state (not after `context` is destroyed).
QAction* addCheckableAction(QMenu* menu, const QString& text, bool checked, const QObject* context,
                            std::function<void(bool)> toggled);

}  // namespace ql
