// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor panel offscreen with the real doctor: a compressed-tensors export of the
// golden tiny Llama (written by quantlab-cli) checked in the background passes; a copy with a
// truncated shard and one dropped GGUF file show their findings; the main window routes a
// dropped .gguf to the panel. With QUANTLAB_SHOT_DIR set, the panel is saved as PNG (how the
// docs' screenshots of it were made).
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QTableWidget>

#include <gtest/gtest.h>

#include "wait_for.h"
#include "ui/export_doctor_view.h"
#include "ui_test_support.h"

namespace ql {
namespace {

using test::waitFor;

QString cli(const QStringList& args) {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(QUANTLAB_CLI), args);
    p.waitForFinished(600000);
    return p.exitCode() == 0 ? QString() : QString::fromUtf8(p.readAll());
}

void shot(QWidget* w, const QString& name) {
    const QByteArray dir = qgetenv("QUANTLAB_SHOT_DIR");
    if (dir.isEmpty()) return;
    w->resize(1280, 720);
    test::settle(50);
    w->grab().save(QDir(QString::fromLocal8Bit(dir)).filePath(name));
}

class ExportDoctorViewTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = test::scratchDir() + "/doctor-view";
        QDir().mkpath(dir_);
        const QString llama = QStringLiteral(QUANTLAB_TEST_DATA_DIR "/models/llama");
        ASSERT_EQ(cli({"ptq", llama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples", "8", "--out",
                       dir_ + "/q", "--force"}),
                  QString());
        ASSERT_EQ(cli({"export", dir_ + "/q", "--as", "compressed-tensors", "--out", dir_ + "/ct", "--force"}), QString());
        ASSERT_EQ(cli({"export", dir_ + "/q", "--as", "gguf", "--gguf-type", "q8_0", "--out", dir_ + "/m.gguf", "--force"}), QString());
    }
    static inline QString dir_;
};

TEST_F(ExportDoctorViewTest, AGoodExportIsDeployableAndABrokenOneListsItsErrors) {
    ExportDoctorView view;
    view.show();
    view.check(dir_ + "/ct");
    ASSERT_TRUE(waitFor([&] { return !view.isChecking(); }, 120000));
    EXPECT_TRUE(view.report().ok());
    EXPECT_EQ(view.report().layout, "compressed-tensors");
    auto* summary = view.findChild<QLabel*>(QStringLiteral("doctorSummary"));
    ASSERT_NE(summary, nullptr);
    EXPECT_TRUE(summary->text().startsWith(QStringLiteral("Deployable"))) << summary->text().toStdString();
    auto* checks = view.findChild<QTableWidget*>(QStringLiteral("doctorChecks"));
    ASSERT_NE(checks, nullptr);
    EXPECT_GE(checks->rowCount(), 8);
    shot(&view, QStringLiteral("export-doctor-deployable.png"));

    // A copy with a missing scale and unfused global scales.
    const QString broken = dir_ + "/ct-broken";
    QDir(broken).removeRecursively();
    QDir().mkpath(broken);
    for (const QString& f : QDir(dir_ + "/ct").entryList(QDir::Files)) QFile::copy(dir_ + "/ct/" + f, broken + "/" + f);
    QFile config(broken + "/config.json");
    ASSERT_TRUE(config.open(QIODevice::ReadOnly));
    QByteArray text = config.readAll();
    config.close();
    text.replace("\"kv_cache_scheme\": null", "\"kv_cache_scheme\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"}");
    text.replace("\"ignore\": [", "\"producer\": {\"name\": \"x\"},\n    \"ignore\": [");
    ASSERT_TRUE(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(text);
    config.close();
    view.check(broken);
    ASSERT_TRUE(waitFor([&] { return !view.isChecking(); }, 120000));
    EXPECT_FALSE(view.report().ok());
    EXPECT_TRUE(summary->text().startsWith(QStringLiteral("Not deployable"))) << summary->text().toStdString();
    auto* findings = view.findChild<QTableWidget*>(QStringLiteral("doctorFindings"));
    ASSERT_NE(findings, nullptr);
    bool kv = false, schema = false;
    for (int r = 0; r < findings->rowCount(); ++r) {
        const QString where = findings->item(r, 1) ? findings->item(r, 1)->text() : QString();
        kv = kv || where.endsWith(QStringLiteral("self_attn.k_scale"));
        schema = schema || where.endsWith(QStringLiteral("quantization_config.producer"));
        if (findings->item(r, 0)->text() == QLatin1String("error")) EXPECT_FALSE(findings->item(r, 4)->text().isEmpty());
    }
    EXPECT_TRUE(kv);
    EXPECT_TRUE(schema);
    shot(&view, QStringLiteral("export-doctor-errors.png"));
}

TEST_F(ExportDoctorViewTest, ADroppedGgufGoesToThePanel) {
    auto window = test::makeMainWindow();
    window->openPath(dir_ + "/m.gguf");
    EXPECT_EQ(window->currentViewId(), QStringLiteral("doctor"));
    ExportDoctorView* view = window->exportDoctor();
    ASSERT_TRUE(waitFor([&] { return !view->isChecking(); }, 120000));
    EXPECT_EQ(view->report().layout, "gguf");
    EXPECT_TRUE(view->report().ok());
}

}  // namespace
}  // namespace ql
