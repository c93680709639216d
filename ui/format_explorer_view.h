// SPDX-License-Identifier: GPL-3.0-or-later
// The Format Explorer, QuantLab's first teaching view: pick a format and see its bit layout,
// every representable value on a number line, its block / scale structure, and a sample block
// quantized step by step by the engine's own kernels. Self-contained: the main window only
// hosts it and shows its actions in a menu.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

class QAction;
class QComboBox;
class QLabel;
class QSettings;
class QSplitter;

namespace ql {

class WrappingLabel;

struct FormatInfo;
class BitLayoutWidget;
class BlockStructureWidget;
class BlockWalkthroughPanel;
class FormatPicker;
class NumberLinePlot;

class FormatExplorerView : public QWidget {
    Q_OBJECT
public:
    // Auto: symmetric log when the grid spans more than ~10 binades (FP8, E5M2), else linear.
    enum class ScaleMode { Auto, Linear, SymLog };
    Q_ENUM(ScaleMode)

    explicit FormatExplorerView(QWidget* parent = nullptr);

    bool selectFormat(const QString& name);
    QString currentFormat() const;
    void setScaleMode(ScaleMode mode);
    ScaleMode scaleMode() const { return m_scaleMode; }

    // Actions with shortcuts, for the main window's menu (enabled while this view is shown).
    QList<QAction*> viewActions() const { return m_actions; }

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

    FormatPicker* picker() const { return m_picker; }
    BitLayoutWidget* bitLayout() const { return m_bitLayout; }
    BlockStructureWidget* blockStructure() const { return m_blockStructure; }
    NumberLinePlot* numberLine() const { return m_numberLine; }
    BlockWalkthroughPanel* walkthrough() const { return m_walkthrough; }
    QString errorText() const;

Q_SIGNALS:
    void formatChanged(const QString& name);

private:
    void buildUi();
    void createActions();
    void showFormat(const QString& name);
    void applyScaleMode();
    void showGridValue(int index);
    void showSampleElement(int index);

    const FormatInfo* m_format = nullptr;
    ScaleMode m_scaleMode = ScaleMode::Auto;
    bool m_applyingScale = false;
    QList<QAction*> m_actions;
    QAction* m_logAction = nullptr;

    FormatPicker* m_picker = nullptr;
    QLabel* m_notes = nullptr;
    QLabel* m_title = nullptr;
    WrappingLabel* m_summary = nullptr;
    QWidget* m_chips = nullptr;
    WrappingLabel* m_scaleRule = nullptr;
    WrappingLabel* m_error = nullptr;
    BitLayoutWidget* m_bitLayout = nullptr;
    WrappingLabel* m_valueFacts = nullptr;
    BlockStructureWidget* m_blockStructure = nullptr;
    NumberLinePlot* m_numberLine = nullptr;
    QComboBox* m_scaleCombo = nullptr;
    BlockWalkthroughPanel* m_walkthrough = nullptr;
    QSplitter* m_outerSplitter = nullptr;
    QSplitter* m_mainSplitter = nullptr;
    QSplitter* m_anatomySplitter = nullptr;
};

}  // namespace ql
