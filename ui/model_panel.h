// SPDX-License-Identifier: GPL-3.0-or-later
// The model panel: a summary of the open model and its quantizable layers as a tree grouped by
// block (name, type, shape, parameters, format and bits per parameter under the current recipe),
// searchable. Right-click a layer to give it its own format or keep it in high precision (mixed
// precision); the recipe editor records the override.
#pragma once

#include <QMap>
#include <QString>
#include <QWidget>

#include <vector>

#include "engine/api/model_api.h"

class QLabel;
class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace ql {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    void setLoading(const QString& path);
    void setModel(const ModelSummary& summary);
    void setLoadError(const QString& message);
    // The layers as the current recipe quantizes them (plan_layer_formats), and the overrides.
    void setPlannedLayers(const std::vector<LayerSummary>& layers, const QMap<QString, QString>& overrides);
    void setFilter(const QString& text);
    bool hasModel() const { return m_hasModel; }
    const ModelSummary& summary() const { return m_summary; }
    QTreeWidget* tree() const { return m_tree; }
    int visibleLayerCount() const;

signals:
    void layerFormatRequested(const QString& layer, const QString& format);  // "" = follow the recipe
    void inspectLayerRequested(const QString& layer);

private:
    void rebuild();
    void applyFilter();
    void showContextMenu(const QPoint& pos);

    QLabel* m_summaryLabel = nullptr;
    QLineEdit* m_filter = nullptr;
    QTreeWidget* m_tree = nullptr;
    ModelSummary m_summary;
    std::vector<LayerSummary> m_planned;
    QMap<QString, QString> m_overrides;
    bool m_hasModel = false;
};

}  // namespace ql
