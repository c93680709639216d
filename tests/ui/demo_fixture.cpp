// SPDX-License-Identifier: GPL-3.0-or-later
#include "demo_fixture.h"

#include <gtest/gtest.h>

#include "engine/api/demo_api.h"

namespace ql::test {

void ensureQuickDemo() {
    if (demo_model_complete(demo_model_dir())) return;
    DemoRequest req;
    req.steps = 3;  // enough for a real, saved demo folder; accuracy is not the point here
    NullJobSink sink;
    CancellationToken cancel;
    build_demo(req, sink, cancel);
    ASSERT_TRUE(demo_model_complete(demo_model_dir()));
}

}  // namespace ql::test
