// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/flight_recorder_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSet>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <set>

#include "plots/heatmap_plot.h"

#include "ui/combo_width.h"

namespace ql {
namespace {

const QString kPrefix = QStringLiteral("flight/");

struct Quantity {
    const char* id;
    const char* title;
    const char* unit;
    enum class Scale { Neutral, LowerIsBetter } scale;
};

// Bin flips are neither good nor bad by size (many late in training: oscillation; none:
// stagnation), and the signed drifts are judged by their magnitude, which a colour scale cannot
// rank: their scale only says bright = higher. Clipping, the mean |scale drift| and the
// teacher distance: bright = low (the weights stay close to where they started).
const Quantity kQuantities[] = {
    {"flips_since_last", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Bin flips since the last record"), "fraction of codes", Quantity::Scale::Neutral},
    {"flips_since_start", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Bin flips since the start"), "fraction of codes", Quantity::Scale::Neutral},
    {"clip_fraction", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Weights at the clip points"), "fraction of weights", Quantity::Scale::LowerIsBetter},
    {"amax_drift", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Amax drift"), "amax / start − 1", Quantity::Scale::Neutral},
    {"scale_drift", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Scale drift (block / group / LSQ)"), "mean |s − s₀| / s₀", Quantity::Scale::LowerIsBetter},
    {"global_scale_drift", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Global-scale drift (NVFP4)"), "global scale / start − 1", Quantity::Scale::Neutral},
    {"block_distance", QT_TRANSLATE_NOOP("FlightRecorderPanel", "Teacher–student distance per block (QAD)"), "relative L2", Quantity::Scale::LowerIsBetter},
};

// a < b with runs of digits compared as numbers: "layers.2" before "layers.10". (QCollator's
// numeric mode needs ICU, which a C-locale or ICU-less Qt silently lacks.)
bool naturalLess(const QString& a, const QString& b) {
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            qsizetype ei = i, ej = j;
            while (ei < a.size() && a[ei].isDigit()) ++ei;
            while (ej < b.size() && b[ej].isDigit()) ++ej;
            const qulonglong x = a.mid(i, ei - i).toULongLong(), y = b.mid(j, ej - j).toULongLong();
            if (x != y) return x < y;
            i = ei;
            j = ej;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

const Quantity* quantity(const QString& id) {
    for (const Quantity& q : kQuantities)
        if (id == QLatin1String(q.id)) return &q;
    return nullptr;
}

}  // namespace

FlightRecorderPanel::FlightRecorderPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    auto* title = new QLabel(tr("<b>Flight recorder</b>"), this);
    bar->addWidget(title);
    bar->addWidget(new QLabel(tr("Show"), this));
    m_quantity = new QComboBox(this);
    m_quantity->setObjectName(QStringLiteral("flightQuantity"));
    for (const Quantity& q : kQuantities) m_quantity->addItem(tr(q.title), QString::fromLatin1(q.id));
    bar->addWidget(m_quantity);
    bar->addWidget(new QLabel(tr("Run"), this));
    m_run = new QComboBox(this);
    m_run->setObjectName(QStringLiteral("flightRun"));
    limitComboWidth(m_run, 18);
    bar->addWidget(m_run, 1);
    m_warning = new QLabel(this);
    m_warning->setObjectName(QStringLiteral("flightWarning"));
    m_warning->setStyleSheet(QStringLiteral("QLabel { color: #c0392b; font-weight: bold; }"));
    m_warning->setWordWrap(true);
    bar->addWidget(m_warning, 2);
    layout->addLayout(bar);
    m_hint = new QLabel(tr("No flight record: QAT/QAD runs record their quantizers every N steps (quantlab-cli train "
                           "--record-every N; the GUI's runs always do)."),
                        this);
    m_hint->setObjectName(QStringLiteral("flightHint"));
    m_hint->setWordWrap(true);
    layout->addWidget(m_hint);
    m_heatmap = new HeatmapPlot(this);
    m_heatmap->setObjectName(QStringLiteral("flightHeatmap"));
    m_heatmap->setExportName(QStringLiteral("flight-recorder"));
    m_heatmap->setMinimumHeight(240);
    layout->addWidget(m_heatmap, 1);
    m_refresh.setSingleShot(true);
    m_refresh.setInterval(200);  // one rebuild per burst of records
    connect(&m_refresh, &QTimer::timeout, this, &FlightRecorderPanel::refresh);
    connect(m_quantity, &QComboBox::currentIndexChanged, this, &FlightRecorderPanel::refresh);
    connect(m_run, &QComboBox::currentIndexChanged, this, &FlightRecorderPanel::refresh);
    refresh();
}

void FlightRecorderPanel::setRuns(const QList<QPair<qint64, QString>>& runs) {
    m_runs = runs;
    QSet<qint64> keep;
    for (const auto& r : runs) keep.insert(r.first);
    for (auto it = m_data.begin(); it != m_data.end();) it = keep.contains(it.key()) ? std::next(it) : m_data.erase(it);
    updateRunChoices();
    scheduleRefresh();
}

void FlightRecorderPanel::updateRunChoices() {
    const qint64 current = m_run->currentData().toLongLong();
    const QSignalBlocker block(m_run);
    m_run->clear();
    for (const auto& [id, name] : m_runs)
        if (m_data.contains(id)) m_run->addItem(name, id);
    const int i = m_run->findData(current);
    m_run->setCurrentIndex(i >= 0 ? i : m_run->count() - 1);
}

void FlightRecorderPanel::addSeries(const QVector<SeriesChunk>& chunks) {
    bool newRun = false;
    for (const SeriesChunk& c : chunks) {
        if (!c.name.startsWith(kPrefix)) continue;
        bool shown = false;
        for (const auto& r : m_runs) shown = shown || r.first == c.runId;
        if (!shown) continue;
        newRun = newRun || !m_data.contains(c.runId);
        Series& s = m_data[c.runId][c.name.mid(kPrefix.size())];
        if (c.reset) {
            s.steps = c.steps;
            s.values = c.values;
        } else {
            s.steps.insert(s.steps.end(), c.steps.begin(), c.steps.end());
            s.values.insert(s.values.end(), c.values.begin(), c.values.end());
        }
    }
    if (newRun) updateRunChoices();
    scheduleRefresh();
}

bool FlightRecorderPanel::hasData() const { return !m_data.isEmpty(); }

void FlightRecorderPanel::setQuantity(const QString& id) {
    const int i = m_quantity->findData(id);
    if (i >= 0) m_quantity->setCurrentIndex(i);
}

bool FlightRecorderPanel::selectRun(qint64 id) {
    const int i = m_run->findData(id);
    if (i < 0) return false;
    m_run->setCurrentIndex(i);
    return true;
}

QString FlightRecorderPanel::warningText() const { return m_warning->text(); }

void FlightRecorderPanel::scheduleRefresh() {
    if (!m_refresh.isActive()) m_refresh.start();
}

void FlightRecorderPanel::flush() {
    m_refresh.stop();
    refresh();
}

void FlightRecorderPanel::refresh() {
    const auto it = m_data.constFind(m_run->currentData().toLongLong());
    m_hint->setVisible(m_data.isEmpty());
    m_heatmap->setVisible(!m_data.isEmpty());
    if (it == m_data.constEnd()) {
        m_heatmap->setData({}, {}, {}, QString());
        m_warning->clear();
        return;
    }
    const RunData& data = it.value();
    const QString id = m_quantity->currentData().toString();
    const Quantity* q = quantity(id);
    const QString prefix = id + QLatin1Char('/');
    QStringList rows;
    std::set<double> stepSet;
    for (const auto& [name, s] : data)
        if (name.startsWith(prefix)) {
            rows << name.mid(prefix.size());
            stepSet.insert(s.steps.begin(), s.steps.end());
        }
    // Layers in model order: "layers.2" before "layers.10".
    std::sort(rows.begin(), rows.end(), naturalLess);
    const std::vector<double> steps(stepSet.begin(), stepSet.end());
    QStringList cols;
    for (double s : steps) cols << QString::number(static_cast<qint64>(s));
    std::vector<std::vector<double>> values(static_cast<size_t>(rows.size()), std::vector<double>(steps.size(), std::nan("")));
    for (int r = 0; r < rows.size(); ++r) {
        const Series& s = data.at(prefix + rows[r]);
        for (size_t k = 0; k < s.steps.size(); ++k) {
            const auto pos = std::lower_bound(steps.begin(), steps.end(), s.steps[k]);
            values[static_cast<size_t>(r)][static_cast<size_t>(pos - steps.begin())] = s.values[k];  // a later value wins
        }
    }
    if (q && q->scale == Quantity::Scale::Neutral) m_heatmap->setNeutralScale();
    else m_heatmap->setHigherIsBetter(false);
    m_heatmap->setTitle(QStringLiteral("%1 — %2 (layers × steps)").arg(m_quantity->currentText(), m_run->currentText()));
    m_heatmap->setData(rows, cols, values, q ? QString::fromUtf8(q->unit) : QString());

    // The warnings hold while their last recorded value is 1.
    auto last = [&](const QString& name) {
        const auto s = data.find(name);
        return s != data.end() && !s->second.values.empty() ? s->second.values.back() : 0.0;
    };
    QStringList warnings;
    if (last(QStringLiteral("stagnating")) > 0.5)
        warnings << tr("Stagnating: no weight code changed in the last records and the loss is flat.");
    if (last(QStringLiteral("diverging")) > 0.5) warnings << tr("Diverging: the loss is far above its best.");
    m_warning->setText(warnings.join(QLatin1Char(' ')));
}

}  // namespace ql
