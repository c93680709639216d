// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/export_doctor_view.h"

#include <QDesktopServices>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMimeData>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "engine/api/doctor_api.h"
#include "ui/background_call.h"

namespace ql {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QColor severityColor(DoctorSeverity s, bool dark) {
    switch (s) {
    case DoctorSeverity::Error: return dark ? QColor(0xff, 0x7b, 0x8a) : QColor(0xc9, 0x2a, 0x43);
    case DoctorSeverity::Warning: return dark ? QColor(0xf5, 0xc2, 0x6b) : QColor(0xa8, 0x6a, 0x00);
    case DoctorSeverity::Info: return dark ? QColor(0x7a, 0xb4, 0xff) : QColor(0x2b, 0x63, 0xd9);
    }
    return {};
}

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, headers.size(), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->setVisible(false);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setWordWrap(true);
    t->setAlternatingRowColors(true);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

}  // namespace

ExportDoctorView::ExportDoctorView(QWidget* parent) : QWidget(parent) {
    setAcceptDrops(true);
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Checks an export the way its consumer loads it — vLLM (compressed-tensors, Model Optimizer), "
                                "TensorRT-LLM, transformers, llama.cpp, ONNX Runtime. Runs after every export; drop an export folder, "
                                "a .gguf or a .onnx file here to check it."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* bar = new QHBoxLayout;
    auto* folder = new QPushButton(tr("Check Folder…"), this);
    folder->setObjectName(QStringLiteral("doctorCheckFolder"));
    auto* gguf = new QPushButton(tr("Check GGUF / ONNX File…"), this);
    gguf->setObjectName(QStringLiteral("doctorCheckGguf"));
    m_recheck = new QPushButton(tr("Check Again"), this);
    m_recheck->setObjectName(QStringLiteral("doctorRecheck"));
    m_recheck->setEnabled(false);
    m_open = new QPushButton(tr("Open Location"), this);
    m_open->setObjectName(QStringLiteral("doctorOpenLocation"));
    m_open->setEnabled(false);
    bar->addWidget(folder);
    bar->addWidget(gguf);
    bar->addWidget(m_recheck);
    bar->addStretch(1);
    bar->addWidget(m_open);
    layout->addLayout(bar);
    m_path = new QLabel(tr("No artifact checked yet."), this);
    m_path->setObjectName(QStringLiteral("doctorPath"));
    m_path->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_path->setWordWrap(true);
    layout->addWidget(m_path);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("doctorSummary"));
    QFont f = m_summary->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.15);
    m_summary->setFont(f);
    layout->addWidget(m_summary);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_findings = makeTable({tr("Severity"), tr("Where"), tr("Problem"), tr("What the consumer does"), tr("Fix")}, split);
    m_findings->setObjectName(QStringLiteral("doctorFindings"));
    m_findings->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_findings->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Interactive);
    m_findings->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    m_findings->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
    m_findings->setColumnWidth(1, 260);
    m_checks = makeTable({tr("Check"), tr("Status"), tr("What it checks"), tr("Covered / why not")}, split);
    m_checks->setObjectName(QStringLiteral("doctorChecks"));
    m_checks->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_checks->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_checks->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    split->addWidget(m_findings);
    split->addWidget(m_checks);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    connect(folder, &QPushButton::clicked, this, &ExportDoctorView::chooseFolder);
    connect(gguf, &QPushButton::clicked, this, &ExportDoctorView::chooseGguf);
    connect(m_recheck, &QPushButton::clicked, this, [this] {
        if (!m_report.path.empty()) check(qs(m_report.path));
    });
    connect(m_open, &QPushButton::clicked, this, &ExportDoctorView::openLocation);
}

void ExportDoctorView::check(const QString& path) {
    if (m_checking) return;
    m_checking = true;
    m_path->setText(path);
    m_summary->setText(tr("Checking …"));
    m_summary->setStyleSheet(QString());
    m_recheck->setEnabled(false);
    const std::string p = path.toStdString();
    backgroundCall<DoctorReport>(this, [p] { return run_doctor(p); },
                                 [this, path](const std::optional<DoctorReport>& r, const QString& error) {
                                     m_checking = false;
                                     if (!r) {
                                         DoctorReport failed;
                                         failed.path = path.toStdString();
                                         failed.layout = "unknown";
                                         failed.findings.push_back({DoctorSeverity::Error, "files", failed.path,
                                                                    error.toStdString(), "", ""});
                                         showReport(failed);
                                     } else {
                                         showReport(*r);
                                     }
                                     emit checked(m_report.ok());
                                 });
}

void ExportDoctorView::showReport(const DoctorReport& r) {
    m_report = r;
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    m_path->setText(qs(r.path));
    m_open->setEnabled(!r.path.empty());
    m_recheck->setEnabled(!r.path.empty());
    const QString counts = tr("%n error(s)", nullptr, static_cast<int>(r.errors())) + QStringLiteral(", ") +
                           tr("%n warning(s)", nullptr, static_cast<int>(r.warnings()));
    const QString what = r.layout == "unknown" ? tr("not a model artifact") : tr("%1, as %2 loads it").arg(qs(r.layout), qs(r.consumer));
    m_summary->setText(r.ok() ? tr("Deployable: %1 — %2 — %3 quantized layer(s) checked").arg(counts, what).arg(r.layers)
                              : tr("Not deployable as is: %1 — %2").arg(counts, what));
    m_summary->setStyleSheet(QStringLiteral("color: %1").arg((r.ok() ? (dark ? QColor(0x4f, 0xd1, 0xb5) : QColor(0x0f, 0x8a, 0x72))
                                                                     : severityColor(DoctorSeverity::Error, dark))
                                                                 .name()));
    m_findings->setRowCount(0);
    for (const DoctorFinding& f : r.findings) {
        const int row = m_findings->rowCount();
        m_findings->insertRow(row);
        auto* sev = new QTableWidgetItem(qs(doctor_severity_name(f.severity)));
        sev->setForeground(severityColor(f.severity, dark));
        QFont bold = sev->font();
        bold.setBold(f.severity == DoctorSeverity::Error);
        sev->setFont(bold);
        m_findings->setItem(row, 0, sev);
        m_findings->setItem(row, 1, new QTableWidgetItem(qs(f.where)));
        auto* problem = new QTableWidgetItem(qs(f.problem));
        problem->setToolTip(qs(f.check) + QStringLiteral(": ") + qs(f.problem));
        m_findings->setItem(row, 2, problem);
        m_findings->setItem(row, 3, new QTableWidgetItem(qs(f.consumer)));
        m_findings->setItem(row, 4, new QTableWidgetItem(qs(f.fix)));
    }
    if (r.findings.empty()) {
        m_findings->insertRow(0);
        auto* none = new QTableWidgetItem(tr("none"));
        m_findings->setItem(0, 0, none);
        m_findings->setItem(0, 2, new QTableWidgetItem(tr("No findings: every check that ran passed.")));
    }
    m_findings->resizeRowsToContents();
    m_checks->setRowCount(0);
    for (const DoctorCheck& c : r.checks) {
        const int row = m_checks->rowCount();
        m_checks->insertRow(row);
        m_checks->setItem(row, 0, new QTableWidgetItem(qs(c.id)));
        auto* status = new QTableWidgetItem(c.ran ? tr("ran") : tr("skipped"));
        if (!c.ran) status->setForeground(severityColor(DoctorSeverity::Warning, dark));
        m_checks->setItem(row, 1, status);
        m_checks->setItem(row, 2, new QTableWidgetItem(qs(c.title)));
        m_checks->setItem(row, 3, new QTableWidgetItem(qs(c.note)));
    }
    m_checks->resizeRowsToContents();
}

void ExportDoctorView::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void ExportDoctorView::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile()) {
            check(url.toLocalFile());
            event->acceptProposedAction();
            return;
        }
}

void ExportDoctorView::chooseFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Check an export folder"));
    if (!dir.isEmpty()) check(dir);
}

void ExportDoctorView::chooseGguf() {
    const QString file =
        QFileDialog::getOpenFileName(this, tr("Check a GGUF or ONNX file"), QString(), tr("Model files (*.gguf *.onnx);;GGUF (*.gguf);;ONNX (*.onnx)"));
    if (!file.isEmpty()) check(file);
}

void ExportDoctorView::openLocation() {
    const QFileInfo fi(qs(m_report.path));
    QDesktopServices::openUrl(QUrl::fromLocalFile(fi.isDir() ? fi.absoluteFilePath() : fi.absolutePath()));
}

}  // namespace ql
