// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <unistd.h>

#include <QDesktopServices>
#include <QDockWidget>
#include <QPushButton>
#include <QUrl>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QSplitter>
#include <QTimer>
#include <QToolBar>

#include "engine/core/demo_folder.h"
#include "ui/compare_view.h"
#include "ui/dashboard_view.h"
#include "ui/experiments_view.h"
#include "ui/evaluation_view.h"
#include "ui/generate_view.h"
#include "ui/open_model_dialog.h"
#include "ui/run_launcher.h"
#include "ui/export_doctor_view.h"
#include "ui/format_explorer_view.h"
#include "ui/block_walkthrough_panel.h"
#include "ui/layer_inspector_view.h"
#include "ui/log_panel.h"
#include "ui/model_panel.h"
#include "ui/project_explorer_panel.h"
#include "ui/project_watcher.h"
#include "ui/recipe_editor.h"
#include "ui/run_controls.h"
#include "ui/theme_manager.h"
#include "ui/view_frame.h"
#include "ui/workbench.h"
#include "ui/whatif_view.h"

namespace ql {

MainWindow::MainWindow(const RuntimeInfo& runtime, QWidget* parent) : QMainWindow(parent), m_runtime(runtime) {
    setWindowTitle(tr("QuantLab"));
    setWindowIcon(QIcon(QStringLiteral(":/quantlab/icons/quantlab.svg")));
    m_theme = new ThemeManager(this);
    m_theme->apply(ThemeManager::savedTheme());

    m_workbench = new Workbench(this);
    auto* central = new QSplitter(Qt::Horizontal, this);
    central->setObjectName(QStringLiteral("centralSplitter"));
    central->setChildrenCollapsible(false);
    auto* left = new QSplitter(Qt::Vertical, central);
    left->setObjectName(QStringLiteral("leftSplitter"));
    m_navigation = new QListWidget(left);
    m_navigation->setObjectName(QStringLiteral("navigation"));
    m_navigation->setMinimumWidth(168);
    m_navigation->setFrameShape(QFrame::NoFrame);
    m_navigation->setFocusPolicy(Qt::TabFocus);
    left->addWidget(m_navigation);
    left->addWidget(m_workbench->explorer());
    left->setStretchFactor(0, 0);
    left->setStretchFactor(1, 1);
    left->setSizes({190, 600});
    central->addWidget(left);
    m_stack = new QStackedWidget(central);
    central->addWidget(m_stack);
    central->setStretchFactor(0, 0);
    central->setStretchFactor(1, 1);
    // A narrow side bar: the views need the width (three plots across at 1280 pixels).
    central->setSizes({290, 1150});
    setCentralWidget(central);
    setAcceptDrops(true);

    createMenus();
    createStatusBar(runtime);
    createWorkbenchViews();
    connect(m_workbench, &Workbench::computeDeviceChanged, this, &MainWindow::showComputeDevice);

    m_explorer = new FormatExplorerView;
    m_explorer->setObjectName(QStringLiteral("formatExplorer"));
    addView(QStringLiteral("format-explorer"), tr("Format Explorer"), m_explorer, tr("&Explorer"), m_explorer->viewActions());
    addView(QStringLiteral("whatif"), tr("What-if"), m_workbench->whatIf());

    m_doctor = new ExportDoctorView;
    m_doctor->setObjectName(QStringLiteral("exportDoctor"));
    addView(QStringLiteral("doctor"), tr("Export Doctor"), m_doctor);

    // Experiments (docs/EXPERIMENTS.md): grids of runs of the open project, with intervals.
    m_experiments = new ExperimentsView;
    m_experiments->setObjectName(QStringLiteral("experimentsView"));
    m_experiments->setProject(m_workbench->projectPath());
    connect(m_workbench, &Workbench::projectOpened, m_experiments, &ExperimentsView::setProject);
    // Runs another process (quantlab-cli experiment run) adds show up while the view is open.
    connect(m_workbench->watcher(), &ProjectWatcher::runsChanged, m_experiments, [this] {
        if (m_experiments->isVisible() && !m_experiments->isRunning()) m_experiments->refresh();
    });
    connect(m_experiments, &ExperimentsView::statusMessage, this, [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    addView(QStringLiteral("experiments"), tr("Experiments"), m_experiments);

    // Generate (docs/GUI.md "Generate"): the open model and the project's quantized runs, text side by side.
    m_generate = new GenerateView;
    m_generate->setObjectName(QStringLiteral("generateView"));
    connect(m_workbench, &Workbench::modelOpened, m_generate, [this](const QString& path) {
        const ModelSummary& s = m_workbench->modelPanel()->summary();
        m_generate->setReferenceModel(QString::fromStdString(s.path.empty() ? path.toStdString() : s.path), s.generates_text,
                                      s.has_chat_template);
    });
    connect(m_workbench->watcher(), &ProjectWatcher::runsChanged, m_generate, [this](const QVector<RunRow>& runs) {
        QList<GenerateView::Candidate> candidates;
        for (const RunRow& r : runs) {
            if (r.status != QLatin1String("completed") || (r.kind != QLatin1String("ptq") && r.kind != QLatin1String("qat") &&
                                                           r.kind != QLatin1String("qad")))
                continue;
            const QString folder = runModelFolder(r.kind, r.configJson);
            if (folder.isEmpty() || !QFileInfo::exists(folder)) continue;
            candidates.append({QStringLiteral("#%1 %2 %3").arg(r.id).arg(r.kind, r.recipe), folder});
        }
        m_generate->setCandidates(candidates);
    });
    connect(m_generate, &GenerateView::statusMessage, this, [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    addView(QStringLiteral("generate"), tr("Generate"), m_generate);

    // Evaluation (docs/GUI.md "Evaluation"): the open model and the project's quantized runs judged by their answers.
    m_evaluation = new EvaluationView;
    m_evaluation->setObjectName(QStringLiteral("evaluationView"));
    m_evaluation->setProject(m_workbench->projectPath());
    connect(m_workbench, &Workbench::projectOpened, m_evaluation, &EvaluationView::setProject);
    connect(m_workbench, &Workbench::modelOpened, m_evaluation, [this](const QString& path) {
        const ModelSummary& s = m_workbench->modelPanel()->summary();
        m_evaluation->setReferenceModel(QString::fromStdString(s.path.empty() ? path.toStdString() : s.path), s.generates_text);
    });
    connect(m_workbench->watcher(), &ProjectWatcher::runsChanged, m_evaluation, [this](const QVector<RunRow>& runs) {
        QList<EvaluationView::Candidate> candidates;
        int evaluations = 0;
        for (const RunRow& r : runs) {
            evaluations += r.kind == QLatin1String("evalsuite") && r.status == QLatin1String("completed");
            if (r.status != QLatin1String("completed") || (r.kind != QLatin1String("ptq") && r.kind != QLatin1String("qat") &&
                                                           r.kind != QLatin1String("qad")))
                continue;
            const QString folder = runModelFolder(r.kind, r.configJson);
            if (folder.isEmpty() || !QFileInfo::exists(folder)) continue;
            candidates.append({QStringLiteral("#%1 %2 %3").arg(r.id).arg(r.kind, r.recipe), folder});
        }
        m_evaluation->setCandidates(candidates);
        if (evaluations != m_evaluation->storedRunCount() && !m_evaluation->isRunning()) m_evaluation->refreshStoredRuns();
    });
    connect(m_evaluation, &EvaluationView::generateRequested, this, [this](const QString& prompt, const QString& model) {
        showView(QStringLiteral("generate"));
        m_generate->setPrompt(prompt);
        m_generate->setChat(true);
        if (!model.isEmpty()) m_generate->checkCandidate(model);
    });
    connect(m_evaluation, &EvaluationView::statusMessage, this, [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    addView(QStringLiteral("evaluation"), tr("Evaluation"), m_evaluation);

    connect(m_navigation, &QListWidget::currentRowChanged, this, &MainWindow::onViewChanged);
    m_navigation->setCurrentRow(0);
    resize(1440, 920);
    restoreSettings();
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    m_fileMenu = file;
    QAction* newProject = file->addAction(tr("&New Project…"), this, &MainWindow::newProjectInteractively);
    newProject->setShortcut(QKeySequence::New);
    QAction* openProject = file->addAction(tr("&Open Project…"), this, &MainWindow::openProjectInteractively);
    openProject->setShortcut(QKeySequence::Open);
    QAction* openModel = file->addAction(tr("Open &Model…"), this, &MainWindow::openModelInteractively);
    openModel->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
    m_recentMenu = file->addMenu(tr("Recent Projects"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::updateRecentMenu);
    file->addAction(tr("Open the &Demo Project"), this, [this] { m_workbench->openDemo(); });
    QAction* retrain = file->addAction(tr("Retrain the Demo Model…"), this, [this] {
        const auto answer = QMessageBox::question(
            this, tr("Retrain the demo model"),
            tr("Train a new demo model from scratch? It trains 10000 steps, 15 minutes to over an hour on two cores, with its curves in "
               "the dashboard, and goes to %1. The shipped demo model stays what \"demo\" opens; a model "
               "trained on another CPU is a slightly different model, so the numbers in docs/RESULTS.md belong "
               "to the shipped one.").arg(QString::fromStdString(retrained_demo_dir())));
        if (answer == QMessageBox::Yes) m_workbench->retrainDemo();
    });
    retrain->setObjectName(QStringLiteral("retrainDemoAction"));
    file->addSeparator();
    QAction* exportRun = file->addAction(tr("&Export Selected Run…"), this, [this] {
        const QList<qint64> ids = m_workbench->explorer()->selectedRuns();
        if (ids.size() != 1)
            statusBar()->showMessage(tr("Select one completed run in the project explorer to export it."), 8000);
        else
            m_workbench->exportRun(ids.first());
    });
    exportRun->setObjectName(QStringLiteral("exportRunAction"));
    exportRun->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addSeparator();
    QAction* screenshot = file->addAction(tr("Save Window Screenshot…"), this, &MainWindow::saveWindowScreenshot);
    screenshot->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    m_viewMenu = menuBar()->addMenu(tr("&View"));
    m_viewMenuAnchor = m_viewMenu->addSeparator();
    QMenu* themes = m_viewMenu->addMenu(tr("&Theme"));
    auto* group = new QActionGroup(this);
    QAction* light = themes->addAction(tr("&Light"), this, [this] { m_theme->apply(ThemeManager::Theme::Light); });
    QAction* dark = themes->addAction(tr("&Dark"), this, [this] { m_theme->apply(ThemeManager::Theme::Dark); });
    for (QAction* a : {light, dark}) {
        a->setCheckable(true);
        group->addAction(a);
    }
    auto syncTheme = [light, dark](ThemeManager::Theme t) {
        light->setChecked(t == ThemeManager::Theme::Light);
        dark->setChecked(t == ThemeManager::Theme::Dark);
    };
    syncTheme(m_theme->theme());
    connect(m_theme, &ThemeManager::themeChanged, this, syncTheme);
    QAction* toggle = m_viewMenu->addAction(tr("Toggle Light/Dark Theme"), m_theme, &ThemeManager::toggle);
    toggle->setObjectName(QStringLiteral("toggleThemeAction"));
    toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    QAction* fullScreen = m_viewMenu->addAction(tr("Full Screen"), this, [this](bool on) {
        on ? showFullScreen() : showNormal();
    });
    fullScreen->setCheckable(true);
    fullScreen->setShortcut(QKeySequence::FullScreen);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    m_helpMenuAction = help->menuAction();
    QAction* keys = help->addAction(tr("Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("About QuantLab"), this, &MainWindow::showAbout);
    help->addAction(tr("About Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::createWorkbenchViews() {
    Workbench* w = m_workbench;
    auto* workbenchView = new QSplitter(Qt::Horizontal);
    workbenchView->setObjectName(QStringLiteral("workbenchView"));
    workbenchView->addWidget(w->modelPanel());
    workbenchView->addWidget(w->recipeEditor());
    workbenchView->setStretchFactor(0, 3);
    workbenchView->setStretchFactor(1, 2);
    addView(QStringLiteral("workbench"), tr("Workbench"), workbenchView);
    addView(QStringLiteral("dashboard"), tr("Dashboard"), w->dashboard());
    addView(QStringLiteral("compare"), tr("Compare"), w->compareView());
    addView(QStringLiteral("inspector"), tr("Layer Inspector"), w->inspector());

    auto* runBar = new QToolBar(tr("Run"), this);
    runBar->setObjectName(QStringLiteral("runToolBar"));
    runBar->setMovable(false);
    runBar->addWidget(w->runControls());
    addToolBar(Qt::TopToolBarArea, runBar);

    auto* logDock = new QDockWidget(tr("Log"), this);
    logDock->setObjectName(QStringLiteral("logDock"));
    logDock->setWidget(w->logPanel());
    logDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, logDock);
    resizeDocks({logDock}, {120}, Qt::Vertical);  // five lines: the views need the height at 1280x800
    m_viewMenu->insertAction(m_viewMenuAnchor, logDock->toggleViewAction());
    logDock->toggleViewAction()->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));

    QMenu* run = new QMenu(tr("&Run"), this);
    menuBar()->insertMenu(m_helpMenuAction, run);
    QAction* start = run->addAction(tr("&Start"), w, &Workbench::startRun);
    start->setShortcut(QKeySequence(Qt::Key_F5));
    QAction* pause = run->addAction(tr("&Pause"), w, &Workbench::pauseRun);
    pause->setShortcut(QKeySequence(Qt::Key_F6));
    QAction* resume = run->addAction(tr("&Resume Selected Run"), w, &Workbench::resumeSelectedRun);
    resume->setShortcut(QKeySequence(Qt::Key_F7));
    QAction* cancel = run->addAction(tr("&Cancel"), w, &Workbench::cancelRun);
    cancel->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    run->addSeparator();
    for (const QString& q : w->recipeEditor()->quickStarts())
        run->addAction(tr("Quick Start: %1").arg(q), this, [w, q] { w->recipeEditor()->applyQuickStart(q); });

    connect(w, &Workbench::statusMessage, this, [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    connect(w, &Workbench::showDashboardRequested, this, [this] { showView(QStringLiteral("dashboard")); });
    connect(w, &Workbench::projectOpened, this, [this](const QString& path) {
        setWindowFilePath(path);
    });
    connect(w->modelPanel(), &ModelPanel::inspectLayerRequested, this, [this, w](const QString& layer) {
        showView(QStringLiteral("inspector"));
        if (!w->inspector()->selectLayer(layer))
            statusBar()->showMessage(tr("No statistics for %1 yet: press Compute Statistics.").arg(layer), 8000);
    });
    connect(w->inspector(), &LayerInspectorView::firstBlockRequested, this,
            [this](const QString& format, const std::vector<float>& block) {
                showView(QStringLiteral("format-explorer"));
                if (!format.isEmpty()) m_explorer->selectFormat(format);
                m_explorer->walkthrough()->setBlock(block);
            });
    connect(w, &Workbench::exportFinished, this, [this, w](const QString& path) {
        // The export's own Export Doctor report (reports, which are not model artifacts, have none).
        statusBar()->showMessage(tr("Exported to %1").arg(path), 8000);
        if (w->lastExportDoctor().layout.empty()) return;
        m_doctor->showReport(w->lastExportDoctor());
        showView(QStringLiteral("doctor"));
    });
}

void MainWindow::newProjectInteractively() {
    const QString path = QFileDialog::getSaveFileName(this, tr("New project"), QDir::homePath() + QStringLiteral("/untitled.qlab"),
                                                      tr("QuantLab project (*.qlab)"));
    if (path.isEmpty()) return;
    if (QFileInfo::exists(path)) {
        QMessageBox::warning(this, tr("New project"), tr("%1 exists already: open it instead, or choose another name.").arg(path));
        return;
    }
    openProject(path, true);
}

void MainWindow::openProjectInteractively() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), QDir::homePath(), tr("QuantLab project (*.qlab)"));
    if (!path.isEmpty()) openProject(path);
}

void MainWindow::openModelInteractively() {
    OpenModelDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted && !dialog.choice().isEmpty()) openModel(dialog.choice());
}

void MainWindow::updateRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = m_workbench->recentProjects();
    for (const QString& path : recent) m_recentMenu->addAction(path, this, [this, path] { openProject(path); });
    if (recent.isEmpty()) m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
}

void MainWindow::updateMemory() {
    // Resident memory of this process (pages in /proc/self/statm × page size): what training and
    // big models cost, next to the threads and BLAS facts.
    QFile statm(QStringLiteral("/proc/self/statm"));
    if (!statm.open(QIODevice::ReadOnly)) return;
    const QList<QByteArray> fields = statm.readAll().split(' ');
    if (fields.size() < 2) return;
    const double rss = fields[1].toDouble() * static_cast<double>(sysconf(_SC_PAGESIZE));
    m_memory->setText(tr("Memory: %1 MB").arg(rss / 1e6, 0, 'f', 0));
}

void MainWindow::showComputeDevice(const QString& device) {
    // Idle, jobs would run on the CPU's threads; a run names its own device (the recipe
    // editor's Device and Precision), so a GPU run is visible at a glance.
    if (device.isEmpty()) {
        m_device->setText(tr("Device: CPU × %1").arg(m_runtime.threads));
        m_device->setToolTip(tr("Where engine jobs run: no run now; a run computes where the recipe editor's Device says"));
        return;
    }
    const QString shown = device.startsWith(QLatin1String("cpu")) ? tr("CPU × %1").arg(m_runtime.threads) + device.mid(3) : device;
    m_device->setText(tr("Device: %1 (running)").arg(shown));
    m_device->setToolTip(tr("Where the run now in progress computes"));
}

void MainWindow::createStatusBar(const RuntimeInfo& runtime) {
    auto add = [this](const QString& text, const QString& tip, const QString& name) {
        auto* label = new QLabel(text, this);
        label->setToolTip(tip);
        label->setObjectName(name);
        statusBar()->addPermanentWidget(label);
        m_statusLabels << label;
        return label;
    };
    add(tr("QuantLab %1").arg(QString::fromStdString(runtime.quantlab_version)), tr("QuantLab version"),
        QStringLiteral("statusVersion"));
    add(tr("CPU threads: %1").arg(runtime.threads), tr("Intra-op threads used by LibTorch and QuantLab's kernels"),
        QStringLiteral("statusThreads"));
    const QString blasPath = QString::fromStdString(runtime.blas);
    // Debian's libblas.so.3 is an alternatives link: name what it resolves to.
    const QString blasTarget = QFileInfo(blasPath).canonicalFilePath();
    const QString blasName = blasTarget.contains(QLatin1String("openblas"), Qt::CaseInsensitive) ? QStringLiteral("OpenBLAS")
                             : blasTarget.contains(QLatin1String("blis"), Qt::CaseInsensitive)   ? QStringLiteral("BLIS")
                             : blasTarget.contains(QLatin1String("mkl"), Qt::CaseInsensitive)    ? QStringLiteral("MKL")
                             : QFileInfo(blasPath).fileName().isEmpty()                          ? blasPath
                                                                                                 : QFileInfo(blasPath).fileName();
    // How it runs in parallel: OpenMP shares LibTorch's thread pool; pthreads spins beside it.
    const QString blasThreads = runtime.blas_threads == "openmp"     ? QStringLiteral(" (OpenMP)")
                                : runtime.blas_threads == "pthreads" ? QStringLiteral(" (pthreads)")
                                                                     : QString();
    QLabel* blas = add(tr("BLAS: %1").arg(blasName + blasThreads), blasTarget.isEmpty() || blasTarget == blasPath ? blasPath : blasPath + QStringLiteral(" → ") + blasTarget,
                       QStringLiteral("statusBlas"));
    if (runtime.reference_blas) {
        blas->setText(tr("BLAS: reference (slow)"));
        blas->setToolTip(tr("%1\nThe reference BLAS makes matrix products ~40× slower. Install libopenblas0-pthread.").arg(blasPath));
        blas->setStyleSheet(QStringLiteral("color: #d9534f; font-weight: 600;"));
    }
    add(tr("LibTorch %1").arg(QString::fromStdString(runtime.torch_version)), tr("LibTorch version"),
        QStringLiteral("statusTorch"));
    add(runtime.cuda_kernels ? tr("CUDA kernels: built") : tr("CUDA kernels: not built"),
        tr("Whether this build contains QuantLab's CUDA kernels"), QStringLiteral("statusCuda"));
    m_device = add(QString(), QString(), QStringLiteral("statusDevice"));
    showComputeDevice(QString());
    m_memory = add(QString(), tr("Resident memory of QuantLab"), QStringLiteral("statusMemory"));
    updateMemory();
    auto* timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, &MainWindow::updateMemory);
    timer->start(2000);
}

QString MainWindow::statusSummary() const {
    QStringList parts;
    for (const QLabel* l : m_statusLabels) parts << l->text();
    return parts.join(QStringLiteral(" | "));
}

void MainWindow::addView(const QString& id, const QString& title, QWidget* view, const QString& menuTitle,
                         const QList<QAction*>& actions) {
    View v;
    v.id = id;
    v.widget = view;
    v.actions = actions;
    // Each view in a scroll area that resizes it (through a frame that reports its minimum
    // size, see ui/view_frame.h): a window smaller than a view's minimum size
    // (the Format Explorer's cards at 1280x800) scrolls that view instead of growing past the
    // screen or squeezing its parts over each other; larger windows show no scroll bars.
    auto* scroll = new QScrollArea(m_stack);
    scroll->setObjectName(id + QStringLiteral("-scroll"));
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);
    scroll->setWidget(new ViewFrame(view));
    m_stack->addWidget(scroll);
    auto* item = new QListWidgetItem(title, m_navigation);
    item->setData(Qt::UserRole, id);
    const int index = static_cast<int>(m_views.size());
    v.goTo = new QAction(title, this);
    if (index < 9) v.goTo->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + index)));
    connect(v.goTo, &QAction::triggered, this, [this, id] { showView(id); });
    m_viewMenu->insertAction(m_viewMenuAnchor, v.goTo);
    item->setToolTip(tr("%1 (%2)").arg(title, v.goTo->shortcut().toString(QKeySequence::NativeText)));
    if (!actions.isEmpty()) {
        v.menu = new QMenu(menuTitle.isEmpty() ? title : menuTitle, this);
        for (QAction* a : actions) {
            if (a)
                v.menu->addAction(a);
            else
                v.menu->addSeparator();
        }
        menuBar()->insertMenu(m_helpMenuAction, v.menu);
    }
    m_views.push_back(v);
    // The list shows every view: no scroll bar in the side bar.
    m_navigation->setMinimumHeight(m_navigation->sizeHintForRow(0) * m_navigation->count() + 2 * m_navigation->frameWidth() + 4);
    onViewChanged(m_navigation->currentRow());
}

bool MainWindow::showView(const QString& id) {
    for (int i = 0; i < m_views.size(); ++i)
        if (m_views[i].id == id) {
            m_navigation->setCurrentRow(i);
            return true;
        }
    return false;
}

QString MainWindow::currentViewId() const {
    const int i = m_stack->currentIndex();
    return i >= 0 && i < m_views.size() ? m_views[i].id : QString();
}

QStringList MainWindow::viewIds() const {
    QStringList ids;
    for (const View& v : m_views) ids << v.id;
    return ids;
}

void MainWindow::onViewChanged(int index) {
    if (index < 0 || index >= m_views.size()) return;
    m_stack->setCurrentIndex(index);
    // Only the shown view's shortcuts may fire; its menu is the only view menu in the bar.
    for (int i = 0; i < m_views.size(); ++i) {
        const bool current = i == index;
        for (QAction* a : m_views[i].actions)
            if (a) a->setEnabled(current);
        if (m_views[i].menu) m_views[i].menu->menuAction()->setVisible(current);
        m_views[i].goTo->setCheckable(true);
        m_views[i].goTo->setChecked(current);
    }
    setWindowTitle(tr("%1 — QuantLab").arg(m_navigation->item(index)->text()));
}

bool MainWindow::openProject(const QString& path, bool create) { return m_workbench->openProject(path, create); }

void MainWindow::openModel(const QString& path) {
    if (m_workbench->projectPath().isEmpty() && !m_workbench->openProject(Workbench::demoProjectPath(),
                                                                       !QFileInfo::exists(Workbench::demoProjectPath())))
        return;
    m_workbench->openModel(path);
    showView(QStringLiteral("workbench"));
}

void MainWindow::openPath(const QString& path) {
    const QFileInfo fi(path);
    if (fi.isFile() && (fi.suffix().compare(QLatin1String("gguf"), Qt::CaseInsensitive) == 0 ||
                        fi.suffix().compare(QLatin1String("onnx"), Qt::CaseInsensitive) == 0)) {
        // A GGUF or ONNX file is an artifact to check, not a project.
        m_doctor->check(fi.absoluteFilePath());
        showView(QStringLiteral("doctor"));
        return;
    }
    if (fi.isDir() || path == QLatin1String("demo"))
        openModel(fi.isDir() ? fi.absoluteFilePath() : path);
    else
        openProject(path);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile()) {
            openPath(url.toLocalFile());
            event->acceptProposedAction();
            return;
        }
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/view"), currentViewId());
    m_explorer->saveSettings(settings);
}

void MainWindow::restoreSettings() {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_explorer->restoreSettings(settings);
    const QString view = settings.value(QStringLiteral("window/view")).toString();
    if (!view.isEmpty()) showView(view);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    QMainWindow::closeEvent(event);
}

void MainWindow::saveWindowScreenshot() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    const QString path = QFileDialog::getSaveFileName(this, tr("Save window screenshot"),
                                                      dir + QStringLiteral("/quantlab-%1.png").arg(currentViewId()),
                                                      tr("PNG image (*.png)"));
    if (path.isEmpty()) return;
    for (QCustomPlot* plot : findChildren<QCustomPlot*>()) plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!grab().save(path, "PNG"))
        QMessageBox::warning(this, tr("Save window screenshot"), tr("Could not write '%1'.").arg(path));
    else
        statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

void MainWindow::showShortcuts() {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Keyboard Shortcuts"));
    auto* layout = new QVBoxLayout(&dialog);
    auto* table = new QTableWidget(0, 2, &dialog);
    table->setHorizontalHeaderLabels({tr("Action"), tr("Shortcut")});
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    for (QAction* menuAction : menuBar()->actions()) {
        QMenu* menu = menuAction->menu();
        if (!menu) continue;
        QList<QAction*> actions = menu->actions();
        for (int i = 0; i < actions.size(); ++i) {
            QAction* a = actions[i];
            if (a->menu()) actions << a->menu()->actions();
            if (a->shortcut().isEmpty()) continue;
            const int row = table->rowCount();
            table->insertRow(row);
            table->setItem(row, 0, new QTableWidgetItem(QString(a->text()).remove(QLatin1Char('&'))));
            table->setItem(row, 1, new QTableWidgetItem(a->shortcut().toString(QKeySequence::NativeText)));
        }
    }
    layout->addWidget(table);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(460, 520);
    dialog.exec();
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, tr("About QuantLab"),
        tr("<h3>QuantLab %1</h3><p>A desktop workbench for quantization experiments.</p>"
           "<p>Qt %2 · QCustomPlot %3 · LibTorch %4</p>"
           "<p>QuantLab is free software under the GNU General Public License version 3 or later. "
           "It uses QCustomPlot (GPL-3.0), Qt (LGPL-3.0) and LibTorch (BSD).</p>")
            .arg(QString::fromStdString(m_runtime.quantlab_version), QString::fromLatin1(qVersion()),
                 QStringLiteral(QCUSTOMPLOT_VERSION_STR), QString::fromStdString(m_runtime.torch_version)));
}

}  // namespace ql
