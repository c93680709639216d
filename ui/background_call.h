// SPDX-License-Identifier: GPL-3.0-or-later
// Runs a short engine call (inspect a model, plan a recipe) on Qt's thread pool and hands its
// result, or its error text, to `context` on the GUI thread. The GUI thread never waits for it;
// if `context` is gone by then, the result is dropped. For long jobs with progress and cancel,
// use JobRunner instead.
#pragma once

#include <QCoreApplication>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include "engine/core/engine_runtime.h"

namespace ql {

template <typename Result, typename Work, typename Done>
void backgroundCall(QObject* context, Work work, Done done) {
    QPointer<QObject> guard(context);
    QThreadPool::globalInstance()->start([guard, work = std::move(work), done = std::move(done)]() mutable {
        prepare_engine_worker_thread();
        auto result = std::make_shared<std::optional<Result>>();
        auto error = std::make_shared<QString>();
        try {
            result->emplace(work());
        } catch (const std::exception& e) {
            *error = QString::fromUtf8(e.what());
        } catch (...) {
            *error = QStringLiteral("unknown error");
        }
        // Posted to the application object, which outlives every pool task (~QCoreApplication
        // waits for the pool), never to `context`: the GUI thread may delete `context` between a
        // check here and the post, and posting to a deleted object is a use after free. Whether
        // `context` is still there is asked on the GUI thread, where deletions happen.
        QObject* app = QCoreApplication::instance();
        if (!app || guard.isNull()) return;
        QMetaObject::invokeMethod(app, [guard, done = std::move(done), result, error]() mutable {
            if (guard) done(*result, *error);
        }, Qt::QueuedConnection);
    });
}

}  // namespace ql
