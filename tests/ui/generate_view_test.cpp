// SPDX-License-Identifier: GPL-3.0-or-later
// The Generate view on the demo model, driven offscreen: opening the model makes it the
// reference, Generate streams the answer while the GUI keeps running events, a quantized run of
// the project appears as a candidate and generates beside it with per-token KL shading and a
// tooltip of alternatives; the Open Model dialog offers the demo and the real model.
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QTextBrowser>

#include <gtest/gtest.h>

#include "engine/api/ptq_api.h"
#include "ui/generate_view.h"
#include "ui/main_window.h"
#include "ui/model_panel.h"
#include "ui/open_model_dialog.h"
#include "ui/token_shading.h"
#include "ui/workbench.h"
#include "ui_test_support.h"
#include "wait_for.h"

namespace ql {
namespace {

using test::waitFor;

TEST(TokenShading, KlMapsToAFaintToFullTintAndTheFirstDivergenceIsMarked) {
    EXPECT_EQ(klShade(0.0), 0.0);
    EXPECT_EQ(klShade(0.001), 0.0);
    EXPECT_NEAR(klShade(0.01), 1.0 / 3.0, 1e-12);
    EXPECT_NEAR(klShade(1.0), 1.0, 1e-12);
    EXPECT_EQ(klShade(50.0), 1.0);
    std::vector<GeneratedTokenInfo> tokens(3);
    tokens[0].text = "a b";
    tokens[1].text = "<x>\n";
    tokens[1].kl_to_reference = 0.5;
    tokens[2].text = "";
    const QString html = generatedTokensHtml(tokens, true, 1, QColor(214, 39, 40), QColor(0, 0, 0));
    EXPECT_TRUE(html.contains(QStringLiteral("a&nbsp;b")));
    EXPECT_TRUE(html.contains(QStringLiteral("&lt;x&gt;↵<br>")));
    EXPECT_TRUE(html.contains(QStringLiteral("<b><u>&lt;x&gt;")));  // token 1 is where the outputs part
    EXPECT_TRUE(html.contains(QStringLiteral("href=\"token:2\"")));
    EXPECT_EQ(html.count(QStringLiteral("background-color")), 1);  // only the token with KL > 0.001
    tokens[1].alternatives = {{"<x>\n", 0.6}, {"y", 0.3}};
    tokens[1].probability = 0.6;
    const QString tip = tokenToolTip(tokens[1], true);
    EXPECT_TRUE(tip.contains(QStringLiteral("'<x>\\n'"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("0.300")));
    EXPECT_TRUE(tip.contains(QStringLiteral("KL(FP ‖ this model) here: 0.5 nats")));
}

TEST(GenerateViewTest, DemoAnswersStreamAndAQuantizedRunIsComparedTokenByToken) {
    auto window = test::makeMainWindow();
    Workbench* w = window->workbench();
    const QString project = QDir(test::scratchDir()).filePath(QStringLiteral("generate.qlab"));
    QFile::remove(project);
    ASSERT_TRUE(window->openProject(project, true));
    window->openModel(QStringLiteral("demo"));
    ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 60000));
    ASSERT_TRUE(window->showView(QStringLiteral("generate")));
    GenerateView* view = window->generateView();
    ASSERT_NE(view, nullptr);
    EXPECT_TRUE(view->findChild<QPushButton*>(QStringLiteral("generateButton"))->isEnabled());

    // A quantized checkpoint of the demo (NF4 weights) to compare with.
    const QString q = QDir(test::scratchDir()).filePath(QStringLiteral("generate-nf4"));
    PtqRequest req;
    req.model = "demo";
    req.recipe = "NF4";
    req.calibration = "synthetic:arith";
    req.samples = 8;
    req.out_dir = q.toStdString();
    req.force = true;
    NullJobSink sink;
    run_ptq(req, sink, CancellationToken{});
    view->setCandidates({{QStringLiteral("NF4 demo"), q}});
    ASSERT_TRUE(view->checkCandidate(q));

    view->setPrompt(QStringLiteral("210+430="));  // 12 + 34, digits least significant first (docs/DATA.md)
    view->setMaxTokens(6);
    ASSERT_TRUE(view->generate());
    EXPECT_TRUE(view->isRunning());
    ASSERT_TRUE(waitFor([&] { return !view->isRunning(); }, 120000)) << view->statusText().toStdString();
    const GenerateReport& r = view->report();
    ASSERT_EQ(r.outputs.size(), 2u) << view->statusText().toStdString();
    // The demo answers arithmetic: 46 as "6400", then its end token.
    EXPECT_EQ(r.outputs[0].text, "6400");
    EXPECT_EQ(r.outputs[0].stop_reason, "end");
    EXPECT_FALSE(view->columnHtml(0).contains(QStringLiteral("background-color")));  // the reference has no shading
    EXPECT_TRUE(view->columnHtml(1).contains(QStringLiteral("href=\"token:0\"")));
    EXPECT_FALSE(view->tokenToolTipAt(1, 0).isEmpty());
    EXPECT_TRUE(view->tokenToolTipAt(1, 0).contains(QStringLiteral("KL(FP")));
    double kl = 0;
    for (const GeneratedTokenInfo& t : r.outputs[1].tokens) kl += t.kl_to_reference;
    EXPECT_GT(kl, 0.0) << "NF4 weights left the distributions identical";
    EXPECT_TRUE(view->statusText().startsWith(QStringLiteral("Done"))) << view->statusText().toStdString();
}

TEST(OpenModelDialogTest, OffersTheDemoAndTheRealModel) {
    OpenModelDialog dialog;
    QListWidget* list = dialog.list();
    ASSERT_GE(list->count(), 2);
    EXPECT_EQ(list->item(0)->data(Qt::UserRole).toString(), QStringLiteral("demo"));
    EXPECT_TRUE(list->item(1)->text().startsWith(QStringLiteral("SmolLM2-135M-Instruct")));
}

}  // namespace
}  // namespace ql
