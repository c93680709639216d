// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/run_controls.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStyle>

#include <algorithm>

#include "engine/core/job_estimate.h"
#include "engine/core/process_memory.h"
#include "engine/jobs/ptq_progress.h"
#include "ui/job_runner.h"

namespace ql {

RunControls::RunControls(JobRunner* runner, QWidget* parent) : QWidget(parent), m_runner(runner) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    auto button = [this, layout](const QString& text, QStyle::StandardPixmap icon, const QString& name, const QString& tip) {
        auto* b = new QPushButton(style()->standardIcon(icon), text, this);
        b->setObjectName(name);
        b->setToolTip(tip);
        layout->addWidget(b);
        return b;
    };
    m_start = button(tr("Run Recipe"), QStyle::SP_MediaPlay, QStringLiteral("startRun"), tr("Run the recipe on the model (F5)"));
    m_pause = button(tr("Pause"), QStyle::SP_MediaPause, QStringLiteral("pauseRun"),
                     tr("Stop training at the next step, keeping a checkpoint to resume from (F6)"));
    m_resume = button(tr("Resume"), QStyle::SP_MediaSeekForward, QStringLiteral("resumeRun"),
                      tr("Continue the selected paused or interrupted training run (F7)"));
    m_cancel = button(tr("Cancel"), QStyle::SP_MediaStop, QStringLiteral("cancelRun"), tr("Stop the running job (Esc)"));
    m_phase = new QLabel(this);
    m_phase->setObjectName(QStringLiteral("runPhase"));
    m_phase->setMinimumWidth(180);
    layout->addWidget(m_phase);
    m_bar = new QProgressBar(this);
    m_bar->setObjectName(QStringLiteral("runProgress"));
    m_bar->setMinimumWidth(220);
    m_bar->setTextVisible(true);
    layout->addWidget(m_bar, 1);
    m_eta = new QLabel(this);
    m_eta->setObjectName(QStringLiteral("runEta"));
    m_eta->setMinimumWidth(220);
    layout->addWidget(m_eta);
    connect(m_start, &QPushButton::clicked, this, &RunControls::startRequested);
    connect(m_pause, &QPushButton::clicked, this, &RunControls::pauseRequested);
    connect(m_resume, &QPushButton::clicked, this, &RunControls::resumeRequested);
    connect(m_cancel, &QPushButton::clicked, this, &RunControls::cancelRequested);
    connect(runner, &JobRunner::progressChanged, this, &RunControls::updateProgress);
    connect(runner, &JobRunner::started, this, [this] {
        m_bar->setRange(0, 0);
        m_phase->setText(tr("%1: starting").arg(m_runner->title()));
        m_eta->clear();
        updateButtons();
    });
    connect(runner, &JobRunner::finished, this, [this](JobRunner::Outcome outcome, const QString& message) {
        m_bar->setRange(0, 100);
        m_bar->setValue(outcome == JobRunner::Outcome::Completed ? 100 : m_bar->value());
        const QString what = outcome == JobRunner::Outcome::Completed ? tr("finished")
                             : outcome == JobRunner::Outcome::Cancelled ? tr("stopped")
                                                                       : tr("failed");
        m_phase->setText(tr("%1: %2").arg(m_runner->title(), what));
        m_eta->setText(outcome == JobRunner::Outcome::Failed ? message.left(120) : QString());
        m_eta->setToolTip(message);
        updateButtons();
    });
    m_bar->setRange(0, 100);
    m_bar->setValue(0);
    m_phase->setText(tr("Ready"));
    updateButtons();
}

QString RunControls::progressText() const { return m_phase->text() + QLatin1Char(' ') + m_eta->text(); }

void RunControls::setResumable(bool on) {
    m_resumable = on;
    updateButtons();
}

void RunControls::setStartEnabled(bool on, const QString& why) {
    m_startEnabled = on;
    m_start->setToolTip(on ? tr("Run the recipe on the model (F5)") : why);
    updateButtons();
}

void RunControls::updateButtons() {
    const bool running = m_runner->isRunning();
    m_start->setEnabled(!running && m_startEnabled);
    m_pause->setEnabled(running);
    m_cancel->setEnabled(running);
    m_resume->setEnabled(!running && m_resumable);
}

void RunControls::updateProgress() {
    const ProgressEstimate& p = m_runner->progress();
    const QString phase = QString::fromStdString(p.phase());
    if (auto f = p.fraction()) {
        m_bar->setRange(0, 1000);
        m_bar->setValue(static_cast<int>(*f * 1000));
        // A layer-by-layer PTQ counts thousandths of a block: show the block and the percentage.
        if (phase == QLatin1String("ptq") && ptq_progress_counts_parts(p.total()))
            m_bar->setFormat(tr("block %1 of %2 · %3 %")
                                 .arg(ptq_progress_part(p.done(), p.total()))
                                 .arg(ptq_progress_parts(p.total()))
                                 .arg(*f * 100, 0, 'f', 1));
        else
            m_bar->setFormat(QStringLiteral("%1 / %2").arg(p.done()).arg(p.total()));
    } else {
        m_bar->setRange(0, 0);  // busy indicator: the total is unknown
    }
    m_phase->setText(tr("%1: %2").arg(m_runner->title(), phase));
    QStringList parts;
    if (auto r = p.rate(); r && phase != QLatin1String("ptq")) parts << tr("%1 %2/s").arg(*r, 0, 'g', 3).arg(phase == QLatin1String("train") ? tr("steps") : tr("items"));
    if (auto eta = p.eta_s()) parts << tr("%1 left").arg(QString::fromStdString(format_duration(*eta)));
    // The memory lane: the process's resident memory (mapped weights included) beside progress.
    if (const ProcessMemory m = process_memory(); m.rss_bytes > 0)
        parts << tr("RSS %1").arg(QString::fromStdString(memory_text(static_cast<double>(m.rss_bytes))));
    m_eta->setText(parts.join(QStringLiteral(" · ")));
}

}  // namespace ql
