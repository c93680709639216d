// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab: the desktop GUI. Thin on purpose: parse the command line, set up the engine runtime,
// show the main window (or render screenshots and quit).
//
//   quantlab [PROJECT.qlab | MODEL_FOLDER] [--theme light|dark] [--format NAME] [--screenshot-dir DIR [--screenshot-size WxH]
//            [--screenshot-experiment NAME[,STEM[,TAB[,METRIC[,CELL]]]]] [--screenshot-progress STEM,PRESET,DATA]]
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QSettings>
#include <QTemporaryDir>

#include <cstdio>
#include <exception>

#include "app/openmp_wait_policy.h"
#include "engine/core/engine_runtime.h"
#include "ui/format_explorer_view.h"
#include "ui/main_window.h"
#include "ui/screenshot_runner.h"
#include "ui/theme_manager.h"
#include "ui/workbench.h"

int main(int argc, char** argv) {
    ql::ensure_passive_openmp_wait(argv);
    // Fractional scale factors (125 %, 150 %) render at their true size instead of rounding.
    QGuiApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("QuantLab"));
    QApplication::setApplicationName(QStringLiteral("QuantLab"));
    QApplication::setApplicationVersion(QString::fromStdString(ql::quantlab_version()));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("QuantLab: a desktop workbench for quantization experiments."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshotDir(QStringLiteral("screenshot-dir"),
                                           QStringLiteral("Render the main views as PNG files into DIR, then quit."),
                                           QStringLiteral("DIR"));
    const QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("Start with the light or dark theme."),
                                   QStringLiteral("light|dark"));
    const QCommandLineOption format(QStringLiteral("format"), QStringLiteral("Open the Format Explorer on format NAME."),
                                    QStringLiteral("NAME"));
    const QCommandLineOption screenshotFormats(
        QStringLiteral("screenshot-formats"),
        QStringLiteral("With --screenshot-dir: render the Format Explorer for these formats (comma-separated) "
                       "instead of the documentation set."),
        QStringLiteral("NAMES"));
    const QCommandLineOption screenshotOnly(
        QStringLiteral("screenshot-only"),
        QStringLiteral("With --screenshot-dir: render only these shots of the documentation set (comma-separated "
                       "file names without .png, e.g. inspector-depth,dashboard)."),
        QStringLiteral("NAMES"));
    const QCommandLineOption screenshotSize(QStringLiteral("screenshot-size"),
                                            QStringLiteral("With --screenshot-dir: the window size (default 1600x1000)."),
                                            QStringLiteral("WxH"));
    const QCommandLineOption screenshotSentences(
        QStringLiteral("screenshot-sentences"),
        QStringLiteral("With --screenshot-dir: render docs/TUTORIAL.md's encoder tour instead, calibrating on this text "
                       "file (one sentence per line; scripts/tutorial-screenshots)."),
        QStringLiteral("FILE"));
    const QCommandLineOption screenshotPairs(QStringLiteral("screenshot-pairs"),
                                             QStringLiteral("With --screenshot-sentences: the eval pairs file."),
                                             QStringLiteral("FILE"));
    const QCommandLineOption screenshotWhatIf(
        QStringLiteral("screenshot-whatif"),
        QStringLiteral("With --screenshot-dir: render the What-if view of the opened model as STEM.png and STEM-dark.png "
                       "(KV cache K, rotation R, tensor T shown; --screenshot-calib for the calibration data)."),
        QStringLiteral("STEM,K,R[,T]"));
    const QCommandLineOption screenshotCalib(QStringLiteral("screenshot-calib"),
                                             QStringLiteral("With --screenshot-whatif: the calibration data."),
                                             QStringLiteral("DATA"));
    const QCommandLineOption screenshotExperiment(
        QStringLiteral("screenshot-experiment"),
        QStringLiteral("With --screenshot-dir: render the Experiments view on experiment NAME as the opened project "
                       "records it, as STEM.png (default experiment-NAME), on plot tab TAB (Cells, Differences, "
                       "QAT fraction, Bits frontier; default: the experiment's own) showing METRIC (default: the "
                       "experiment's first), with the run of cell CELL selected (last: a cell key has commas)."),
        QStringLiteral("NAME[,STEM[,TAB[,METRIC[,CELL]]]]"));
    const QCommandLineOption screenshotRealModel(
        QStringLiteral("screenshot-real-model"),
        QStringLiteral("With --screenshot-dir: render docs/TUTORIAL.md's real-LLM tour on the opened project of the real "
                       "SmolLM2 (scripts/real-model-screenshots), calibrating on TEXT and generating an answer to PROMPT."),
        QStringLiteral("TEXT,PROMPT"));
    const QCommandLineOption screenshotDoctor(
        QStringLiteral("screenshot-doctor"),
        QStringLiteral("With --screenshot-dir and a .onnx or .gguf file as the path: render the Export Doctor's report on it "
                       "as STEM.png."),
        QStringLiteral("STEM"));
    const QCommandLineOption screenshotProgress(
        QStringLiteral("screenshot-progress"),
        QStringLiteral("With --screenshot-dir: start a PTQ of the opened model with PRESET calibrating on DATA and render the "
                       "workbench as STEM.png once its progress has moved and its time left is known (the estimate, the "
                       "progress and the memory lane); the run is cancelled when the window closes."),
        QStringLiteral("STEM,PRESET,DATA"));
    parser.addOptions({screenshotDir, screenshotFormats, screenshotSentences, screenshotPairs, screenshotSize, screenshotOnly, screenshotWhatIf,
                       screenshotCalib, screenshotExperiment, screenshotRealModel, screenshotDoctor, screenshotProgress, theme, format});
    parser.addPositionalArgument(QStringLiteral("path"),
                                 QStringLiteral("A QuantLab project file (.qlab) or a model folder to open; none: the demo project."),
                                 QStringLiteral("[project|model]"));
    // Unknown options are reported and ignored: a stray argument must not stop the GUI.
    if (!parser.parse(QApplication::arguments()))
        std::fprintf(stderr, "quantlab: %s (ignored)\n", qPrintable(parser.errorText()));
    if (parser.isSet(QStringLiteral("help"))) parser.showHelp(0);
    if (parser.isSet(QStringLiteral("version"))) parser.showVersion();

    const bool screenshots = parser.isSet(screenshotDir);
    QTemporaryDir settingsDir;
    if (screenshots) {
        // Screenshots must not depend on, or change, the user's saved window layout.
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());
    }

    ql::RuntimeInfo runtime;
    try {
        runtime = ql::initialise_engine_runtime();
    } catch (const std::exception& e) {
        QMessageBox::warning(nullptr, QStringLiteral("QuantLab"),
                             QStringLiteral("The engine runtime could not be set up: %1").arg(QString::fromUtf8(e.what())));
    }

    ql::MainWindow window(runtime);
    if (parser.isSet(theme)) window.themeManager()->apply(ql::ThemeManager::fromName(parser.value(theme)));
    if (parser.isSet(format) && !window.formatExplorer()->selectFormat(parser.value(format)))
        std::fprintf(stderr, "quantlab: unknown format '%s' (ignored)\n", qPrintable(parser.value(format)));
    // No argument: the demo project, so that a new user starts with a model and presets ready.
    if (!parser.positionalArguments().isEmpty())
        window.openPath(parser.positionalArguments().constFirst());
    else if (!screenshots)
        window.workbench()->openDemo();

    if (screenshots) {
        QSize size(1600, 1000);
        if (parser.isSet(screenshotSize)) {
            const QStringList wh = parser.value(screenshotSize).split(QLatin1Char('x'));
            bool okW = false, okH = false;
            const QSize asked = wh.size() == 2 ? QSize(wh[0].toInt(&okW), wh[1].toInt(&okH)) : QSize();
            if (okW && okH && asked.width() >= 640 && asked.height() >= 480 && asked.width() <= 8192 && asked.height() <= 8192)
                size = asked;
            else
                std::fprintf(stderr, "quantlab: --screenshot-size '%s' is not WxH between 640x480 and 8192x8192 (using 1600x1000)\n",
                             qPrintable(parser.value(screenshotSize)));
        }
        window.resize(size);
        ql::ScreenshotRunner runner(&window, parser.value(screenshotDir));
        if (parser.isSet(screenshotSentences))
            runner.setShots(ql::ScreenshotRunner::encoderShots(parser.value(screenshotSentences), parser.value(screenshotPairs)));
        else if (parser.isSet(screenshotRealModel)) {
            const QString value = parser.value(screenshotRealModel);
            const int comma = value.indexOf(QLatin1Char(','));
            runner.setShots(ql::ScreenshotRunner::realModelShots(value.left(comma), comma < 0 ? QString() : value.mid(comma + 1)));
        } else if (parser.isSet(screenshotFormats))
            runner.setShots(ql::ScreenshotRunner::formatShots(parser.value(screenshotFormats).split(QLatin1Char(','), Qt::SkipEmptyParts)));
        if (parser.isSet(screenshotOnly)) {
            const QStringList names = parser.value(screenshotOnly).split(QLatin1Char(','), Qt::SkipEmptyParts);
            std::vector<ql::ScreenshotRunner::Shot> shots;
            // From the set chosen above: the encoder's shots with --screenshot-sentences.
            const std::vector<ql::ScreenshotRunner::Shot> pool =
                parser.isSet(screenshotSentences)
                    ? ql::ScreenshotRunner::encoderShots(parser.value(screenshotSentences), parser.value(screenshotPairs))
                    : ql::ScreenshotRunner::defaultShots();
            for (const ql::ScreenshotRunner::Shot& shot : pool)
                if (names.contains(QString(shot.file).remove(QStringLiteral(".png")))) shots.push_back(shot);
            if (shots.empty()) std::fprintf(stderr, "quantlab: --screenshot-only names no shot (ignored)\n");
            else runner.setShots(std::move(shots));
        }
        if (parser.isSet(screenshotDoctor)) runner.setShots(ql::ScreenshotRunner::doctorShots(parser.value(screenshotDoctor)));
        if (parser.isSet(screenshotProgress)) {
            const QStringList p = parser.value(screenshotProgress).split(QLatin1Char(','));
            if (p.size() != 3) {
                std::fprintf(stderr, "quantlab: --screenshot-progress expects STEM,PRESET,DATA\n");
                return 1;
            }
            runner.setShots(ql::ScreenshotRunner::progressShots(p[0], p[1], p[2]));
        }
        if (parser.isSet(screenshotWhatIf)) {
            const QStringList w = parser.value(screenshotWhatIf).split(QLatin1Char(','));
            if (w.size() < 3) {
                std::fprintf(stderr, "quantlab: --screenshot-whatif expects STEM,KV,ROTATION[,TENSOR]\n");
                return 1;
            }
            runner.setShots(ql::ScreenshotRunner::whatIfShots(w[0], w[1], w[2], w.size() > 3 ? w[3] : QString(),
                                                              parser.value(screenshotCalib)));
        }
        if (parser.isSet(screenshotExperiment)) {
            const QStringList e = parser.value(screenshotExperiment).split(QLatin1Char(','));
            const QString name = e.value(0).trimmed();
            if (name.isEmpty()) {
                std::fprintf(stderr, "quantlab: --screenshot-experiment expects NAME[,STEM[,TAB[,METRIC[,CELL]]]]\n");
                return 1;
            }
            const QString stem = e.value(1).trimmed().isEmpty() ? QStringLiteral("experiment-") + name : e.value(1).trimmed();
            // The cell key last, with its own commas ("bits=6,menu=NVFP4+BF16,method=mixed").
            runner.setShots(ql::ScreenshotRunner::experimentShots(name, stem, e.value(2).trimmed(), e.mid(4).join(QLatin1Char(',')).trimmed(),
                                                                  e.value(3).trimmed()));
        }
        QObject::connect(&runner, &ql::ScreenshotRunner::finished, &app, [](int code) { QApplication::exit(code); });
        window.show();
        runner.start();
        return QApplication::exec();
    }
    window.show();
    return QApplication::exec();
}
