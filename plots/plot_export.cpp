// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/plot_export.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QSvgGenerator>

#include <qcustomplot.h>

namespace ql {

QString savePlot(QCustomPlot* plot, const QString& path, int width, int height) {
    if (!plot) return QStringLiteral("no plot to save");
    const QString suffix = QFileInfo(path).suffix().toLower();
    const int w = width > 0 ? width : plot->width();
    const int h = height > 0 ? height : plot->height();
    bool ok = false;
    if (suffix == QLatin1String("png")) {
        ok = plot->savePng(path, w, h, 2.0);
    } else if (suffix == QLatin1String("pdf")) {
        ok = plot->savePdf(path, w, h);
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(QSize(w, h));
        generator.setViewBox(QRect(0, 0, w, h));
        generator.setTitle(QStringLiteral("QuantLab plot"));
        QCPPainter painter;
        if (painter.begin(&generator)) {
            plot->toPainter(&painter, w, h);
            ok = painter.end();
        }
        ok = ok && QFileInfo(path).size() > 0;
    } else {
        return QStringLiteral("Cannot save '%1': choose a .png, .svg or .pdf file name.").arg(path);
    }
    if (!ok) return QStringLiteral("Could not write '%1' (check that the folder exists and is writable).").arg(path);
    return {};
}

namespace {

QString saveInteractively(QCustomPlot* plot, const QString& baseName, const QString& suffix, const QString& filter) {
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("export/lastDir"),
                                       QStandardPaths::writableLocation(QStandardPaths::PicturesLocation))
                            .toString();
    const QString proposal = QDir(dir).filePath(baseName + QLatin1Char('.') + suffix);
    const QString path = QFileDialog::getSaveFileName(plot, QObject::tr("Save plot"), proposal, filter);
    if (path.isEmpty()) return {};
    settings.setValue(QStringLiteral("export/lastDir"), QFileInfo(path).absolutePath());
    const QString error = savePlot(plot, path);
    if (!error.isEmpty()) {
        QMessageBox::warning(plot, QObject::tr("Save plot"), error);
        return {};
    }
    return path;
}

}  // namespace

QString savePlotInteractively(QCustomPlot* plot, const QString& baseName) {
    return saveInteractively(plot, baseName, QStringLiteral("png"),
                             QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
}

void addPlotExportActions(QMenu* menu, QCustomPlot* plot, const QString& baseName,
                          const std::function<QString()>& csv) {
    menu->addAction(QObject::tr("Save as PNG…"), plot, [plot, baseName] {
        saveInteractively(plot, baseName, QStringLiteral("png"), QObject::tr("PNG image (*.png)"));
    });
    menu->addAction(QObject::tr("Save as SVG…"), plot, [plot, baseName] {
        saveInteractively(plot, baseName, QStringLiteral("svg"), QObject::tr("SVG drawing (*.svg)"));
    });
    menu->addAction(QObject::tr("Save as PDF…"), plot, [plot, baseName] {
        saveInteractively(plot, baseName, QStringLiteral("pdf"), QObject::tr("PDF document (*.pdf)"));
    });
    if (csv) {
        menu->addAction(QObject::tr("Copy data as CSV"), plot,
                        [csv] { QApplication::clipboard()->setText(csv()); });
    }
}

QAction* addCheckableAction(QMenu* menu, const QString& text, bool checked, const QObject* context,
                            std::function<void(bool)> toggled) {
    QAction* action = menu->addAction(text, context, std::move(toggled));
    action->setCheckable(true);
    action->setChecked(checked);
    return action;
}

}  // namespace ql
