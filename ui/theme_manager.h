// SPDX-License-Identifier: GPL-3.0-or-later
// Light and dark themes: the Fusion style with a hand-tuned palette plus a short style sheet for
// the few widgets that need more than a palette (navigation, header, chips, error banner).
// Custom-painted widgets and plots read the palette, so switching needs no other plumbing.
#pragma once

#include <QObject>
#include <QString>

namespace ql {

class ThemeManager : public QObject {
    Q_OBJECT
public:
    enum class Theme { Light, Dark };
    Q_ENUM(Theme)

    explicit ThemeManager(QObject* parent = nullptr);

    // Applies `theme` to the whole application and remembers it in QSettings ("ui/theme").
    void apply(Theme theme);
    void toggle();
    Theme theme() const { return m_theme; }
    // The theme saved in QSettings, Light when none.
    static Theme savedTheme();

    static QString name(Theme theme);
    // "light" / "dark" (case-insensitive); anything else is `fallback`.
    static Theme fromName(const QString& name, Theme fallback = Theme::Light);

Q_SIGNALS:
    void themeChanged(ql::ThemeManager::Theme theme);

private:
    Theme m_theme = Theme::Light;
};

}  // namespace ql
