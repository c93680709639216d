// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA in the GUI, offscreen with real widgets and the real engine: the recipe editor's LoRA method
// (base, rank, targets, init), the run settings it stores, and the export dialog's merge-preview
// panel computing on a LoRA run trained here on the golden tiny Llama.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "engine/api/lora_api.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/wait_for.h"
#include "ui/export_dialog.h"
#include "ui/recipe_editor.h"
#include "ui/run_setup.h"

namespace ql {
namespace {

// Starts the dialog's merge preview and waits for it; a failure carries the panel's note.
::testing::AssertionResult previewed(ExportDialog& dialog) {
    bool done = false, ok = false;
    QObject connection;  // the slot below goes with it
    QObject::connect(&dialog, &ExportDialog::previewFinished, &connection, [&](bool success) {
        done = true;
        ok = success;
    });
    dialog.startPreview();
    if (!test::waitFor([&] { return done; }, 120000)) return ::testing::AssertionFailure() << "the preview did not finish";
    if (!ok) return ::testing::AssertionFailure() << dialog.findChild<QLabel*>(QStringLiteral("previewNote"))->text().toStdString();
    return ::testing::AssertionSuccess();
}

TEST(RecipeEditor, LoraMethodShowsTheAdapterFieldsAndTheFrozenBase) {
    RecipeEditor editor;
    auto* lora = editor.findChild<QGroupBox*>(QStringLiteral("loraGroup"));
    ASSERT_NE(lora, nullptr);
    EXPECT_TRUE(lora->isHidden());
    ASSERT_TRUE(editor.applyQuickStart(QStringLiteral("NF4 LoRA")));
    EXPECT_EQ(editor.method(), RunSetup::Method::Lora);
    EXPECT_FALSE(lora->isHidden());
    EXPECT_NE(editor.findChild<QLabel*>(QStringLiteral("loraBase"))->text().indexOf(QStringLiteral("NF4")), -1);
    editor.findChild<QSpinBox*>(QStringLiteral("loraRank"))->setValue(4);
    editor.findChild<QLineEdit*>(QStringLiteral("loraTargets"))->setText(QStringLiteral("q_proj,v_proj"));
    auto* init = editor.findChild<QComboBox*>(QStringLiteral("loraInit"));
    init->setCurrentIndex(init->findData(QStringLiteral("loftq")));
    const RunSetup s = editor.setup();
    EXPECT_EQ(methodName(s.method), QStringLiteral("lora"));
    EXPECT_EQ(s.loraRank, 4);
    EXPECT_EQ(s.loraTargets, QStringLiteral("q_proj,v_proj"));
    EXPECT_EQ(s.loraInit, QStringLiteral("loftq"));
    // Stored with the project run and read back (resume).
    const RunSetup back = runSetupFromJson(toJson(s));
    EXPECT_EQ(back.method, RunSetup::Method::Lora);
    EXPECT_EQ(back.loraRank, 4);
    EXPECT_EQ(back.loraInit, QStringLiteral("loftq"));
    EXPECT_EQ(back.loraTargets, QStringLiteral("q_proj,v_proj"));
}

TEST(ExportDialog, ALoraRunOffersPeftAndMergedFormsAndPreviewsTheMergeCost) {
    QTemporaryDir dir;
    LoraTrainRequest req;
    req.method = "qlora";
    req.model = std::string(QUANTLAB_SOURCE_DIR) + "/tests/data/models/llama";
    req.data = "synthetic:random-tokens";
    req.out_dir = QDir(dir.path()).filePath(QStringLiteral("run")).toStdString();
    req.steps = 4;
    req.batch_size = 4;
    req.lr = 3e-2;
    req.eval_samples = 8;
    NullJobSink sink;
    CancellationToken cancel;
    run_lora_training(req, sink, cancel);

    ExportDialog dialog(QStringLiteral("#1 QLoRA"), dir.path());
    EXPECT_TRUE(dialog.findChild<QGroupBox*>(QStringLiteral("mergePreview"))->isHidden());
    dialog.setLoraRun(QString::fromStdString(req.out_dir), QStringLiteral("synthetic:random-tokens"));
    EXPECT_TRUE(dialog.isLoraRun());
    EXPECT_EQ(dialog.choice().kind, QStringLiteral("peft"));
    EXPECT_TRUE(dialog.findChild<QRadioButton*>(QStringLiteral("export:hf-modelopt"))->isHidden());
    EXPECT_FALSE(dialog.findChild<QRadioButton*>(QStringLiteral("export:merged-fp"))->isHidden());
    EXPECT_FALSE(dialog.findChild<QGroupBox*>(QStringLiteral("mergePreview"))->isHidden());
    ASSERT_TRUE(previewed(dialog));
    auto* table = dialog.findChild<QTableWidget*>(QStringLiteral("previewTable"));
    ASSERT_NE(table->item(1, 2), nullptr);
    EXPECT_GT(table->item(1, 2)->text().toDouble(), 0.0);  // KL of the re-quantized merge
    EXPECT_EQ(dialog.findChild<QTableWidget*>(QStringLiteral("previewLayers"))->rowCount(), 14);
    EXPECT_NE(dialog.findChild<QLabel*>(QStringLiteral("previewNote"))->text().indexOf(QStringLiteral("double quant")), -1);
}

// The merge preview with an eval suite: a LoRA run on the demo (its arithmetic, which the demo
// answers as text) answers the suite in each form; on a full-precision base no merge flips a verdict.
TEST(ExportDialog, TheMergePreviewAnswersAnEvalSuiteInEachForm) {
    QTemporaryDir dir;
    LoraTrainRequest req;
    req.method = "lora";
    req.model = "demo";
    req.data = "synthetic:arith";
    req.out_dir = QDir(dir.path()).filePath(QStringLiteral("run")).toStdString();
    req.steps = 6;
    req.batch_size = 8;
    req.lr = 3e-2;
    req.rank = 4;
    req.alpha = 8;
    req.eval_samples = 8;
    NullJobSink sink;
    CancellationToken cancel;
    run_lora_training(req, sink, cancel);
    // Sums with their digits least significant first, as the demo writes numbers.
    const QString suite = QDir(dir.path()).filePath(QStringLiteral("suite.jsonl"));
    {
        QFile f(suite);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        const auto digits = [](int v, int n) {
            QString out;
            for (int k = 0; k < n; ++k, v /= 10) out += QChar('0' + v % 10);
            return out;
        };
        for (int i = 0; i < 5; ++i) {
            const int a = 17 + 71 * i, b = 5 + 37 * i;
            f.write(QStringLiteral("{\"id\": \"add-%1\", \"category\": \"add\", \"prompt\": \"%2+%3=\", \"max_tokens\": 6, "
                                   "\"check\": {\"type\": \"exact\", \"answer\": \"%4\"}}\n")
                        .arg(i)
                        .arg(digits(a, 3), digits(b, 3), digits(a + b, 4))
                        .toUtf8());
        }
    }
    ExportDialog dialog(QStringLiteral("#2 LoRA"), dir.path());
    dialog.setLoraRun(QString::fromStdString(req.out_dir), QStringLiteral("synthetic:arith"));
    dialog.findChild<QLineEdit*>(QStringLiteral("previewSuite"))->setText(suite);
    dialog.findChild<QSpinBox*>(QStringLiteral("previewSuiteItems"))->setValue(4);
    ASSERT_TRUE(previewed(dialog));
    auto* table = dialog.findChild<QTableWidget*>(QStringLiteral("previewTable"));
    ASSERT_NE(table->item(0, 4), nullptr);
    const QString adapted = table->item(0, 4)->text();
    EXPECT_TRUE(adapted.endsWith(QStringLiteral(" / 4"))) << adapted.toStdString();
    EXPECT_EQ(table->item(2, 4)->text(), adapted + QStringLiteral(" · no flips"));
    EXPECT_EQ(table->item(1, 4)->text(), adapted + QStringLiteral(" · no flips"));
    // QUANTLAB_SHOT_DIR set: the dialog as PNG (how the docs' screenshot of the panel was made).
    if (const QByteArray shots = qgetenv("QUANTLAB_SHOT_DIR"); !shots.isEmpty()) {
        dialog.show();
        test::settle(50);
        dialog.grab().save(QDir(QString::fromLocal8Bit(shots)).filePath(QStringLiteral("export-merge-preview-suite.png")));
    }
}

}  // namespace
}  // namespace ql
