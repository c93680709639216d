// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA in the GUI, offscreen with real widgets and the real engine: the recipe editor's LoRA method
// (base, rank, targets, init), the run settings it stores, and the export dialog's merge-preview
// panel computing on a LoRA run trained here on the golden tiny Llama.
#include <QApplication>
#include <QComboBox>
#include <QDir>
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
#include "tests/ui/wait_for.h"
#include "ui/export_dialog.h"
#include "ui/recipe_editor.h"
#include "ui/run_setup.h"

namespace ql {
namespace {

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
    bool done = false, ok = false;
    QObject::connect(&dialog, &ExportDialog::previewFinished, [&](bool success) {
        done = true;
        ok = success;
    });
    dialog.startPreview();
    ASSERT_TRUE(test::waitFor([&] { return done; }, 120000));
    ASSERT_TRUE(ok) << dialog.findChild<QLabel*>(QStringLiteral("previewNote"))->text().toStdString();
    auto* table = dialog.findChild<QTableWidget*>(QStringLiteral("previewTable"));
    ASSERT_NE(table->item(1, 2), nullptr);
    EXPECT_GT(table->item(1, 2)->text().toDouble(), 0.0);  // KL of the re-quantized merge
    EXPECT_EQ(dialog.findChild<QTableWidget*>(QStringLiteral("previewLayers"))->rowCount(), 14);
    EXPECT_NE(dialog.findChild<QLabel*>(QStringLiteral("previewNote"))->text().indexOf(QStringLiteral("double quant")), -1);
}

}  // namespace
}  // namespace ql
