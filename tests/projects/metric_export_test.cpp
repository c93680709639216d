// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_export.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/errors.h"
#include "projects/metric_writer.h"
#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

struct Exported {
    test::TempDir dir;
    ProjectFile project = ProjectFile::create(dir / "p.qlab");
    std::int64_t run = project.create_run(test::run_spec("qat"));
    Exported() {
        MetricWriter w(project.path(), run);
        w.append(0, "loss", 2.5, 1700000000.25);
        w.append(1, "loss", std::numeric_limits<double>::quiet_NaN(), 1700000001.5);
        w.append(0, "eval,acc", 0.1, 1700000000.0);
        w.finish(RunStatus::Completed);
    }
};

TEST(MetricExport, CsvHasOneLinePerPointAndQuotesOddNames) {
    Exported e;
    std::ostringstream out;
    write_metrics_csv(e.project, e.run, out);
    const std::string r = std::to_string(e.run);
    EXPECT_EQ(out.str(), "run,name,step,value,wall_time\n" +
                             r + ",\"eval,acc\",0,0.10000000000000001,1700000000\n" +
                             r + ",loss,0,2.5,1700000000.25\n" +
                             r + ",loss,1,nan,1700000001.5\n");
    std::ostringstream one;
    write_metrics_csv(e.project, e.run, one, std::string("loss"));
    EXPECT_EQ(one.str().find("eval"), std::string::npos);
}

TEST(MetricExport, JsonKeepsNonFiniteValuesAsStrings) {
    Exported e;
    std::ostringstream out;
    write_metrics_json(e.project, e.run, out);
    const auto j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["run"], e.run);
    ASSERT_EQ(j["metrics"].size(), 2u);
    const auto& loss = j["metrics"][1];
    EXPECT_EQ(loss["name"], "loss");
    EXPECT_EQ(loss["steps"], nlohmann::json({0, 1}));
    EXPECT_EQ(loss["values"][0], 2.5);
    EXPECT_EQ(loss["values"][1], "nan");
    EXPECT_EQ(loss["wall_times"][1], 1700000001.5);
}

TEST(MetricExport, UnknownRunIsAUserError) {
    Exported e;
    std::ostringstream out;
    EXPECT_THROW(write_metrics_csv(e.project, 42, out), UserError);
}

}  // namespace
}  // namespace ql::projects
