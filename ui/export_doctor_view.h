// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor panel: what the doctor (engine/export/export_doctor.h) found in an artifact,
// shown after every export and for any export folder or .gguf file dropped on it (or chosen with
// its buttons). A summary line (layout, consumer, errors / warnings), the findings (severity,
// where, problem, what the consumer would do, the fix) and the checks that ran or why not.
// The doctor runs on Qt's thread pool (backgroundCall); the GUI thread never waits for it.
#pragma once

#include <QString>
#include <QWidget>

#include "engine/core/doctor_report.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace ql {

class ExportDoctorView : public QWidget {
    Q_OBJECT
public:
    explicit ExportDoctorView(QWidget* parent = nullptr);

    // Checks `path` in the background; checked() follows.
    void check(const QString& path);
    // Shows a report already computed (the export's own).
    void showReport(const DoctorReport& report);
    bool isChecking() const { return m_checking; }
    const DoctorReport& report() const { return m_report; }

signals:
    void checked(bool ok);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void chooseFolder();
    void chooseGguf();
    void openLocation();

    DoctorReport m_report;
    bool m_checking = false;
    QLabel* m_summary = nullptr;
    QLabel* m_path = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_recheck = nullptr;
    QTableWidget* m_findings = nullptr;
    QTableWidget* m_checks = nullptr;
};

}  // namespace ql
