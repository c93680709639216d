// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/token_shading.h"

#include <algorithm>
#include <cmath>

namespace ql {
namespace {

// A token's text as HTML: escaped, spaces kept, line breaks as <br>, control characters visible.
QString tokenHtml(const std::string& text) {
    if (text.empty()) return QStringLiteral("<span style=\"color:#888888\">∅</span>");
    QString s = QString::fromUtf8(text.data(), static_cast<int>(text.size())).toHtmlEscaped();
    s.replace(QLatin1Char('\t'), QStringLiteral("&nbsp;&nbsp;&nbsp;&nbsp;"));
    s.replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
    s.replace(QLatin1Char('\n'), QStringLiteral("↵<br>"));
    return s;
}

QString visible(const std::string& text) {
    QString s = QString::fromUtf8(text.data(), static_cast<int>(text.size()));
    s.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return QLatin1Char('\'') + s + QLatin1Char('\'');
}

}  // namespace

double klShade(double kl) {
    if (!(kl > 0.001)) return 0.0;
    return std::clamp(std::log10(kl / 0.001) / 3.0, 0.0, 1.0);
}

QString generatedTokensHtml(const std::vector<GeneratedTokenInfo>& tokens, bool shade, int64_t firstDivergence,
                            const QColor& accent, const QColor& text) {
    QString html = QStringLiteral("<div style=\"line-height:150%\">");
    for (size_t i = 0; i < tokens.size(); ++i) {
        const GeneratedTokenInfo& t = tokens[i];
        QString style = QStringLiteral("color:%1; text-decoration:none;").arg(text.name());
        if (shade) {
            const double a = klShade(t.kl_to_reference);
            if (a > 0) {
                QColor c = accent;
                c.setAlphaF(0.15 + 0.75 * a);
                style += QStringLiteral("background-color:rgba(%1,%2,%3,%4);").arg(c.red()).arg(c.green()).arg(c.blue()).arg(c.alphaF(), 0, 'f', 2);
            }
        }
        QString piece = tokenHtml(t.text);
        if (static_cast<int64_t>(i) == firstDivergence)
            piece = QStringLiteral("<b><u>") + piece + QStringLiteral("</u></b>");
        html += QStringLiteral("<a href=\"token:%1\" style=\"%2\">%3</a>").arg(i).arg(style, piece);
    }
    return html + QStringLiteral("</div>");
}

QString tokenToolTip(const GeneratedTokenInfo& t, bool hasReference) {
    QString tip = QStringLiteral("%1   p %2   id %3").arg(visible(t.text)).arg(t.probability, 0, 'f', 3).arg(t.id);
    if (!t.alternatives.empty()) {
        tip += QStringLiteral("\nmost likely here:");
        for (const auto& [text, p] : t.alternatives) tip += QStringLiteral("\n  %1  %2").arg(visible(text), -14).arg(p, 0, 'f', 3);
    }
    if (hasReference) tip += QStringLiteral("\nKL(FP ‖ this model) here: %1 nats").arg(t.kl_to_reference, 0, 'g', 3);
    return tip;
}

}  // namespace ql
