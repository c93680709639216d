// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/whatif_controller.h"

#include <QDir>
#include <QFile>

#include <memory>

#include "engine/api/whatif_api.h"
#include "ui/job_runner.h"
#include "ui/recipe_editor.h"
#include "ui/whatif_view.h"

namespace ql {

WhatIfController::WhatIfController(WhatIfView* view, JobRunner* runner, RecipeEditor* recipe, std::function<QString()> model,
                                   std::function<bool()> startRun, QObject* parent)
    : QObject(parent), m_view(view), m_runner(runner), m_recipe(recipe), m_model(std::move(model)), m_startRun(std::move(startRun)) {
    connect(view, &WhatIfView::computeRequested, this, &WhatIfController::compare);
    connect(view, &WhatIfView::runRequested, this, &WhatIfController::runWithChoice);
    connect(runner, &JobRunner::finished, this, [this](JobRunner::Outcome outcome, const QString& text) {
        m_view->setBusy(false);
        if (outcome == JobRunner::Outcome::Failed) m_view->setMessage(text, true);
    });
}

bool WhatIfController::compare(const QString& kvCache, const QString& rotation, int samples) {
    if (m_runner->isRunning() || m_model().isEmpty()) {
        emit message(tr("Open a model (and let the running job finish) before comparing."), true);
        return false;
    }
    WhatIfRequest req;
    req.model = m_model().toStdString();
    const QString recipePath = QDir(m_recipeDir.path()).filePath(QStringLiteral("whatif.recipe.json"));
    QFile recipeFile(recipePath);
    if (!m_recipeDir.isValid() || !recipeFile.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        recipeFile.write(m_recipe->recipeJson().toUtf8()) < 0) {
        const QString why = tr("The what-if recipe could not be written to %1.").arg(recipePath);
        m_view->setMessage(why, true);
        emit message(why, true);
        return false;
    }
    recipeFile.close();
    req.recipe = recipePath.toStdString();
    req.calibration = m_recipe->setupCalibration().toStdString();
    req.kv_cache = kvCache.toStdString();
    req.rotate = rotation.toStdString();
    req.samples = samples;
    req.eval_samples = 2 * samples;
    auto result = std::make_shared<WhatIfReport>();
    m_view->setBusy(true);
    const bool started = m_runner->start(
        tr("What-if"), [req, result](JobSink& sink, const CancellationToken& cancel) { *result = run_what_if(req, sink, cancel); },
        std::nullopt, {}, [this, result] { m_view->setReport(*result); });
    if (!started) m_view->setBusy(false);
    return started;
}

bool WhatIfController::runWithChoice(const QString& kvCache, const QString& rotation, const QString& method) {
    if (!m_recipe->setKvCache(kvCache) || !m_recipe->setRotation(rotation)) {
        emit message(tr("The recipe editor does not know %1 / %2.").arg(kvCache, rotation), true);
        return false;
    }
    m_recipe->setMethod(method == QLatin1String("qad") ? RunSetup::Method::Qad : RunSetup::Method::Ptq);
    return m_startRun();
}

}  // namespace ql
