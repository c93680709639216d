// SPDX-License-Identifier: GPL-3.0-or-later
// Renders the main views into PNG files and reports when done: `quantlab --screenshot-dir DIR`
// (scripts/screenshots runs it under Xvfb) keeps docs/screenshots in step with the code.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <vector>

namespace ql {

class MainWindow;

class ScreenshotRunner : public QObject {
    Q_OBJECT
public:
    struct Shot {
        QString file;                    // "format-explorer-nvfp4.png"
        std::function<void(MainWindow&)> setup;
        // Polled after setup until true (at most a minute): models open and curves load in the
        // background, so a shot waits for what it shows. Empty: ready at once.
        std::function<bool(MainWindow&)> ready = {};
        int timeoutMs = 60000;           // how long `ready` may keep it waiting
    };

    ScreenshotRunner(MainWindow* window, const QString& directory, QObject* parent = nullptr);

    // The workbench views on the open project (workbench, dashboard, compare; light and dark),
    // then the Format Explorer in the states the documentation shows.
    static std::vector<Shot> defaultShots();
    // docs/TUTORIAL.md's tour on an encoder project (all-MiniLM-L6-v2 with its PTQ and QAD runs,
    // scripts/tutorial-screenshots): "tutorial-*.png" of the workbench, the compare view, the
    // QAD dashboard and the layer inspector's outliers, histogram and sensitivity, calibrated on
    // `sentences` (a text file, one per line) with `pairs` as the eval pairs.
    static std::vector<Shot> encoderShots(const QString& sentences, const QString& pairs);
    // docs/TUTORIAL.md's real-LLM tour on a project of the real SmolLM2-135M-Instruct
    // (scripts/real-model-screenshots): "real-*.png" of the workbench, the compare view, the QAD
    // dashboard, the layer inspector's outliers calibrated on `text` (a real-text file), and the
    // Generate view answering `prompt` with the FP model beside every completed PTQ / QAD run.
    static std::vector<Shot> realModelShots(const QString& text, const QString& prompt);
    // One shot per format, "format-explorer-<name>.png", in the current theme.
    static std::vector<Shot> formatShots(const QStringList& formats);
    // The Export Doctor view on the artifact the window opened (a .onnx / .gguf file given as
    // the path), as STEM.png, once its report is in.
    static std::vector<Shot> doctorShots(const QString& stem);
    // The What-if view on the open model: "<stem>.png" (light) and "<stem>-dark.png", comparing
    // `kvCache` and `rotation` (calibration data `calibration`, "" = the editor's) and showing
    // `tensor` ("" = the one the view picks).
    static std::vector<Shot> whatIfShots(const QString& stem, const QString& kvCache, const QString& rotation,
                                         const QString& tensor, const QString& calibration = {});
    // The Experiments view on experiment `name` as the open project records it (its own spec, so
    // an encoder's form or a run with overrides shows as it ran): "<stem>.png" on plot tab `tab`
    // ("Cells", "Differences", "QAT fraction", "Bits frontier"; "" = the one the experiment was
    // made for), with the run of `cell` selected ("" = none), showing `metric` ("" = the
    // experiment's first).
    // A long PTQ in progress (docs/BENCHMARKS.md's big models): "<stem>.png" of the workbench once
    // a PTQ of the open model with `preset`, calibrating on `calibration`, has reported `done`
    // of its progress (default: into the second block of a layer-by-layer run, so that its time
    // left comes from a whole block) — the recipe panel's estimate, the progress bar and the
    // memory lane (RSS) beside it. The run is cancelled when the window closes.
    static std::vector<Shot> progressShots(const QString& stem, const QString& preset, const QString& calibration,
                                           qint64 done = 1001);
    static std::vector<Shot> experimentShots(const QString& name, const QString& stem, const QString& tab = {},
                                             const QString& cell = {}, const QString& metric = {});
    void setShots(std::vector<Shot> shots) { m_shots = std::move(shots); }

    // Starts after the event loop runs; emits finished() with 0 when every file was written.
    void start();
    QStringList written() const { return m_written; }

Q_SIGNALS:
    void finished(int exitCode);

private:
    void next();
    void capture();

    MainWindow* m_window;
    QString m_directory;
    std::vector<Shot> m_shots;
    size_t m_index = 0;
    QStringList m_written;
    int m_failures = 0;
    int m_waitedMs = 0;
};

}  // namespace ql
