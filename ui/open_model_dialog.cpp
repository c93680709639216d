// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/open_model_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "engine/core/model_cache.h"

namespace ql {

OpenModelDialog::OpenModelDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Open Model"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Double-click a model, or pick one from disk:"), this));
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("openModelList"));
    auto add = [this](const QString& title, const QString& detail, const QString& choice, bool enabled) {
        auto* item = new QListWidgetItem(title + QStringLiteral("\n    ") + detail, m_list);
        item->setData(Qt::UserRole, choice);
        if (!enabled) item->setFlags(Qt::NoItemFlags);
    };
    add(tr("Demo model (built in)"), tr("the 1.2 M-parameter arithmetic decoder QuantLab trains itself"), QStringLiteral("demo"), true);
    for (const KnownModel& m : known_models())
        add(QString::fromStdString(m.name),
            QString::fromStdString(m.present ? m.description : "not fetched yet: " + m.fetch_hint),
            QString::fromStdString(m.path), m.present);
    m_list->setCurrentRow(0);
    layout->addWidget(m_list);
    connect(m_list, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
        if (item->flags() & Qt::ItemIsEnabled) accept(item->data(Qt::UserRole).toString());
    });

    auto* pick = new QHBoxLayout;
    auto* folder = new QPushButton(tr("HF Folder or Checkpoint…"), this);
    auto* gguf = new QPushButton(tr("GGUF File…"), this);
    pick->addWidget(folder);
    pick->addWidget(gguf);
    pick->addStretch(1);
    layout->addLayout(pick);
    connect(folder, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Open an HF model folder or a QuantLab checkpoint"), QDir::homePath());
        if (!dir.isEmpty()) accept(dir);
    });
    connect(gguf, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Open a GGUF file"), QString::fromStdString(model_cache_dir()),
                                                          tr("GGUF files (*.gguf);;All files (*)"));
        if (!file.isEmpty()) accept(file);
    });
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        QListWidgetItem* item = m_list->currentItem();
        if (item && (item->flags() & Qt::ItemIsEnabled)) accept(item->data(Qt::UserRole).toString());
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(620, 320);
}

void OpenModelDialog::accept(const QString& choice) {
    m_choice = choice;
    QDialog::accept();
}

}  // namespace ql
