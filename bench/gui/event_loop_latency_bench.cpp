// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-gui-bench: how late the GUI thread's event loop serves a 5 ms timer (ui/event_loop_probe.h)
// while the workbench trains a QAD run of the shipped demo model and its curves arrive on the
// dashboard, as a user runs it (offscreen). The baseline, measured in the same run: the same
// window with nothing running. Counters in milliseconds: median, p99 and max of the tick gaps;
// p99_vs_idle = p99 during the run / p99 idle. The reported time is the run's wall time. docs/BENCHMARKS.md "GUI responsiveness".
//
//   QT_QPA_PLATFORM=offscreen build/bench/quantlab-gui-bench [--benchmark_format=json]
#include <QApplication>
#include <QElapsedTimer>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "app/openmp_wait_policy.h"
#include "engine/core/engine_runtime.h"
#include "ui/dashboard_view.h"
#include "ui/event_loop_probe.h"
#include "ui/main_window.h"
#include "ui/model_panel.h"
#include "ui/recipe_editor.h"
#include "ui/workbench.h"

namespace ql {
namespace {

QTemporaryDir* g_scratch = nullptr;

template <typename Condition>
bool waitFor(Condition condition, int timeoutMs) {
    QElapsedTimer t;
    t.start();
    while (!condition()) {
        if (t.elapsed() > timeoutMs) return false;
        QTest::qWait(20);
    }
    return true;
}

void report(benchmark::State& state, const EventLoopProbe::Summary& s, const char* prefix) {
    const std::string p(prefix);
    state.counters[p + "median_ms"] = s.medianMs;
    state.counters[p + "p99_ms"] = s.p99Ms;
    state.counters[p + "max_ms"] = s.maxMs;
    state.counters[p + "ticks"] = static_cast<double>(s.ticks);
}

// One iteration: the idle baseline (3 s), then a 60-step NVFP4 QAD run (batch 32, evaluation every
// 20 steps), the settings tests/ui/latency/gui_stall_test.cpp uses.
void BM_EventLoopDuringQad(benchmark::State& state) {
    for (auto _ : state) {
        auto window = std::make_unique<MainWindow>(initialise_engine_runtime());
        window->resize(1600, 1000);
        window->show();
        Workbench* w = window->workbench();
        if (!window->openProject(g_scratch->filePath(QStringLiteral("latency.qlab")), true)) {
            state.SkipWithError("cannot create the project");
            return;
        }
        window->openModel(QStringLiteral("demo"));
        if (!waitFor([&] { return w->modelPanel()->hasModel(); }, 120000)) {
            state.SkipWithError(("the demo model did not open: " + w->lastError().toStdString()).c_str());
            return;
        }
        w->recipeEditor()->applyQuickStart(QStringLiteral("NVFP4 QAD"));
        w->recipeEditor()->setSteps(60);
        w->recipeEditor()->setEvalEvery(20);
        w->recipeEditor()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(32);
        QTest::qWait(500);  // the recipe plan, off the GUI thread

        EventLoopProbe probe;
        probe.start();
        QTest::qWait(3000);
        probe.stop();
        const EventLoopProbe::Summary idle = probe.summary();

        QElapsedTimer wall;
        wall.start();
        probe.start();
        if (!w->startRun()) {
            state.SkipWithError(("the QAD run did not start: " + w->lastError().toStdString()).c_str());
            return;
        }
        const bool finished = w->runner()->waitForFinished(1800000);
        probe.stop();
        if (!finished || w->dashboard()->pointCount(w->runner()->runId(), QStringLiteral("train/loss")) < 1) {
            state.SkipWithError("the QAD run did not finish with curves on the dashboard");
            return;
        }
        const EventLoopProbe::Summary run = probe.summary();
        state.SetIterationTime(static_cast<double>(wall.elapsed()) / 1000.0);  // the run's wall time
        report(state, run, "");
        report(state, idle, "idle_");
        state.counters["p99_vs_idle"] = idle.p99Ms > 0 ? run.p99Ms / idle.p99Ms : 0;
    }
}
BENCHMARK(BM_EventLoopDuringQad)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ql

int main(int argc, char** argv) {
    ql::ensure_passive_openmp_wait(argv);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("QuantLabBench"));
    QApplication::setApplicationName(QStringLiteral("QuantLabBench"));
    // The demo project, settings and any cache live in a scratch folder, never the user's.
    QTemporaryDir scratch;
    ql::g_scratch = &scratch;
    qputenv("XDG_DATA_HOME", (scratch.path() + QStringLiteral("/data")).toUtf8());
    qputenv("XDG_CACHE_HOME", (scratch.path() + QStringLiteral("/cache")).toUtf8());
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, scratch.path());
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
