// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/theme_manager.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

namespace ql {
namespace {

QPalette lightPalette() {
    QPalette p;
    const QColor window(0xef, 0xf1, 0xf4), base(0xff, 0xff, 0xff), text(0x1f, 0x23, 0x28);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0xf6, 0xf8, 0xfa));
    p.setColor(QPalette::ToolTipBase, QColor(0xff, 0xff, 0xf4));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8c, 0x95, 0x9f));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0xfb, 0xfb, 0xfc));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Light, Qt::white);
    p.setColor(QPalette::Midlight, QColor(0xe9, 0xeb, 0xee));
    p.setColor(QPalette::Mid, QColor(0xc4, 0xc9, 0xd0));
    p.setColor(QPalette::Dark, QColor(0xa0, 0xa7, 0xb0));
    p.setColor(QPalette::Shadow, QColor(0x70, 0x76, 0x80));
    p.setColor(QPalette::Highlight, QColor(0x1f, 0x6f, 0xeb));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x09, 0x69, 0xda));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x9a, 0xa1, 0xaa));
    return p;
}

QPalette darkPalette() {
    QPalette p;
    // Cards (Base) sit a step lighter than the window, as in most dark desktop UIs.
    const QColor window(0x16, 0x18, 0x1d), base(0x1f, 0x22, 0x28), text(0xe3, 0xe6, 0xea);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x24, 0x28, 0x2f));
    p.setColor(QPalette::ToolTipBase, QColor(0x2b, 0x30, 0x38));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x7d, 0x85, 0x90));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x2a, 0x2e, 0x35));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Light, QColor(0x3a, 0x3f, 0x48));
    p.setColor(QPalette::Midlight, QColor(0x31, 0x35, 0x3d));
    p.setColor(QPalette::Mid, QColor(0x3c, 0x41, 0x4a));
    p.setColor(QPalette::Dark, QColor(0x12, 0x14, 0x18));
    p.setColor(QPalette::Shadow, QColor(0x0a, 0x0b, 0x0d));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xf0));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb6, 0xff));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x6b, 0x72, 0x7c));
    return p;
}

// Only what a palette cannot say. Object names are set by the widgets that own them.
QString styleSheet(bool dark) {
    const QString navBg = dark ? "#111317" : "#e6e9ed";
    const QString navSel = dark ? "#1f2228" : "#ffffff";
    const QString navText = dark ? "#c9ced6" : "#3a4049";
    const QString accent = dark ? "#6cb6ff" : "#1f6feb";
    const QString chipBg = dark ? "#262a32" : "#f3f5f8";
    const QString chipBorder = dark ? "#363c46" : "#d5dce5";
    const QString cardBg = dark ? "#1f2228" : "#ffffff";
    const QString cardBorder = dark ? "#2c3139" : "#dde2e8";
    const QString muted = dark ? "#9aa3ae" : "#5b636d";
    const QString errBg = dark ? "#3d1f22" : "#fdecec";
    const QString errBorder = dark ? "#8c3a40" : "#e7a1a1";
    const QString errText = dark ? "#ffb3b3" : "#8a1c1c";
    const QString warnBg = dark ? "#3a3220" : "#fff6e0";
    const QString warnBorder = dark ? "#7d6a35" : "#e8cf8a";
    const QString warnText = dark ? "#f2d48a" : "#6b4e00";
    return QStringLiteral(R"(
QListWidget#navigation { background: %1; border: none; border-right: 1px solid %6; padding-top: 6px; outline: 0; }
QListWidget#navigation::item { color: %3; padding: 9px 12px; border-left: 3px solid transparent; }
QListWidget#navigation::item:selected { background: %2; color: %3; border-left: 3px solid %4; font-weight: 600; }
QListWidget#navigation::item:hover:!selected { background: %5; }
QLabel#formatTitle { font-size: 20pt; font-weight: 600; }
QLabel#sectionTitle { font-weight: 600; color: %7; }
QLabel[chip="true"] { background: %5; border: 1px solid %6; border-radius: 9px; padding: 2px 9px; }
QLabel#scaleRule { background: %5; border: 1px solid %6; border-radius: 4px; padding: 4px 8px; }
QLabel#errorBanner { background: %8; border: 1px solid %9; color: %10; border-radius: 4px; padding: 5px 8px; }
QLabel#warningBanner { background: %11; border: 1px solid %12; color: %13; border-radius: 4px; padding: 5px 8px; }
QLabel#muted { color: %7; }
QFrame#card { background: %14; border: 1px solid %15; border-radius: 6px; }
QStatusBar QLabel { padding: 0 6px; }
)")
        .arg(navBg, navSel, navText, accent, chipBg, chipBorder, muted, errBg, errBorder)
        .arg(errText, warnBg, warnBorder, warnText, cardBg, cardBorder);
}

}  // namespace

ThemeManager::ThemeManager(QObject* parent) : QObject(parent) {}

void ThemeManager::apply(Theme theme) {
    m_theme = theme;
    // Fusion draws the same on every platform and honours the palette completely.
    if (QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    const bool dark = theme == Theme::Dark;
    QApplication::setPalette(dark ? darkPalette() : lightPalette());
    qApp->setStyleSheet(styleSheet(dark));
    QSettings().setValue(QStringLiteral("ui/theme"), name(theme));
    Q_EMIT themeChanged(theme);
}

void ThemeManager::toggle() { apply(m_theme == Theme::Dark ? Theme::Light : Theme::Dark); }

ThemeManager::Theme ThemeManager::savedTheme() {
    return fromName(QSettings().value(QStringLiteral("ui/theme")).toString());
}

QString ThemeManager::name(Theme theme) {
    return theme == Theme::Dark ? QStringLiteral("dark") : QStringLiteral("light");
}

ThemeManager::Theme ThemeManager::fromName(const QString& name, Theme fallback) {
    if (name.compare(QLatin1String("dark"), Qt::CaseInsensitive) == 0) return Theme::Dark;
    if (name.compare(QLatin1String("light"), Qt::CaseInsensitive) == 0) return Theme::Light;
    return fallback;
}

}  // namespace ql
