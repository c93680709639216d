// SPDX-License-Identifier: GPL-3.0-or-later
// Renders a plot widget in the light and the dark theme and writes the grabs as PNGs, so that a
// person can look at them (QL_PLOT_GRAB_DIR=/tmp/x picks the folder; default: the test scratch
// folder). The tests assert only that the grabs exist and use the theme's background.
#pragma once

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QPixmap>
#include <QString>
#include <QTest>
#include <QWidget>

#include <gtest/gtest.h>

#include "ui/theme_manager.h"
#include "ui_test_support.h"

namespace ql::test {

inline QString plotGrabDir() {
    const QString dir = qEnvironmentVariable("QL_PLOT_GRAB_DIR", scratchDir());
    QDir().mkpath(dir);
    return dir;
}

// Shows `widget` at `size`, grabs it in both themes into <dir>/<baseName>-light.png and
// -dark.png, and leaves the application in the light theme.
inline void grabInBothThemes(QWidget& widget, const QString& baseName, QSize size = {900, 520}) {
    ThemeManager themes;
    widget.resize(size);
    widget.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&widget));
    for (const auto theme : {ThemeManager::Theme::Light, ThemeManager::Theme::Dark}) {
        themes.apply(theme);
        settle(50);
        const QImage image = widget.grab().toImage();
        ASSERT_FALSE(image.isNull());
        const QString path = QDir(plotGrabDir()).filePath(
            baseName + (theme == ThemeManager::Theme::Dark ? QStringLiteral("-dark.png") : QStringLiteral("-light.png")));
        EXPECT_TRUE(image.save(path)) << path.toStdString();
        // A corner of the plot is the theme's Base colour: the plot followed the theme.
        const QColor corner = image.pixelColor(2, 2);
        EXPECT_EQ(corner.rgb(), QApplication::palette().color(QPalette::Base).rgb()) << baseName.toStdString();
    }
    themes.apply(ThemeManager::Theme::Light);
    settle();
}

}  // namespace ql::test
