// SPDX-License-Identifier: GPL-3.0-or-later
// The demo model that ships in resources/demo (docs/DATA.md "The demo model"): its files are the
// ones its record hashes, "demo" opens it whatever the cache holds, and a real evaluation of the
// held-out problems its record names gives the exact match the record states (>= 99 %).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/api/demo_api.h"
#include "engine/core/demo_folder.h"
#include "engine/data/dataset.h"
#include "engine/eval/evaluator.h"
#include "engine/io/sha256.h"
#include "engine/io/whole_file.h"
#include "engine/loading/model_source.h"
#include "engine/train/demo_trainer.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json shipped_record() { return json::parse(read_whole_file(shipped_demo_dir() + "/quantlab.json")); }

std::string temp_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("quantlab-shipped-demo-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

TEST(ShippedDemo, LivesInTheSourceTreesResources) {
    EXPECT_EQ(shipped_demo_dir(), std::string(QUANTLAB_SOURCE_DIR) + "/resources/demo");
    EXPECT_TRUE(demo_model_complete(shipped_demo_dir()));
}

TEST(ShippedDemo, FilesHaveTheSizesAndHashesItsRecordHolds) {
    const json record = shipped_record();
    ASSERT_TRUE(record.contains("files"));
    for (const char* name : {"config.json", "model.safetensors"}) {
        const std::string path = shipped_demo_dir() + "/" + name;
        ASSERT_TRUE(record["files"].contains(name)) << name;
        EXPECT_EQ(record["files"][name]["sha256"].get<std::string>(), sha256_file_hex(path)) << name;
        EXPECT_EQ(record["files"][name]["bytes"].get<uint64_t>(), fs::file_size(path)) << name;
    }
    EXPECT_NO_THROW(verify_demo_files(shipped_demo_dir()));
    const DemoReport r = shipped_demo_report();
    EXPECT_TRUE(r.shipped);
    EXPECT_EQ(r.out_dir, shipped_demo_dir());
}

TEST(ShippedDemo, RecordNamesTheCommandSeedMachineAndBuild) {
    const json record = shipped_record();
    const json& t = record.at("training");
    EXPECT_NE(t.at("command").get<std::string>().find("quantlab-cli demo"), std::string::npos);
    EXPECT_EQ(t.at("seed").get<uint64_t>(), 0u);
    EXPECT_EQ(t.at("steps").get<int64_t>(), demo_training_config().steps);  // the full schedule
    const json& on = record.at("trained_on");
    for (const char* key : {"cpu", "libtorch", "blas", "blas_config", "source_commit", "quantlab_version"})
        EXPECT_FALSE(on.at(key).get<std::string>().empty()) << key;
    EXPECT_GT(on.at("hardware_threads").get<int>(), 0);
    EXPECT_NE(shipped_demo_report().trained_on.find(on.at("cpu").get<std::string>()), std::string::npos);
}

TEST(ShippedDemo, DemoOpensTheShippedFolderWhateverTheCacheHolds) {
    const std::string cache = temp_dir("cache");
    const char* old = std::getenv("XDG_CACHE_HOME");
    const std::string saved = old ? old : "";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    // An empty cache, then one holding a (copied) retrained demo: "demo" is the shipped one both times.
    EXPECT_EQ(resolve_model_path("demo"), shipped_demo_dir());
    fs::create_directories(fs::path(retrained_demo_dir()).parent_path());
    fs::copy(shipped_demo_dir(), retrained_demo_dir(), fs::copy_options::recursive);
    EXPECT_EQ(retrained_demo_dir(), cache + "/quantlab/demo");
    EXPECT_EQ(resolve_model_path("demo"), shipped_demo_dir());
    const OpenedModel m = open_model("demo");
    EXPECT_TRUE(m.is_demo);
    EXPECT_EQ(m.path, shipped_demo_dir());
    // The retrained one is opened by its path.
    EXPECT_EQ(resolve_model_path(retrained_demo_dir()), retrained_demo_dir());
    EXPECT_TRUE(open_model(retrained_demo_dir()).is_demo);
    if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
    fs::remove_all(cache);
}

TEST(ShippedDemo, ADamagedOrReplacedFileIsRefusedNamingIt) {
    const std::string dir = temp_dir("damaged") + "/demo";
    fs::copy(shipped_demo_dir(), dir, fs::copy_options::recursive);
    {
        std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(-1, std::ios::end);
        f.put('\x7f');
    }
    std::string error = test::user_error_text([&] { verify_demo_files(dir); });
    EXPECT_NE(error.find(dir + "/model.safetensors: SHA-256"), std::string::npos) << error;
    EXPECT_NE(error.find(shipped_record()["files"]["model.safetensors"]["sha256"].get<std::string>()), std::string::npos)
        << error;
    // A git LFS pointer (or a truncated copy) has another size.
    std::ofstream(dir + "/model.safetensors", std::ios::trunc) << "version https://git-lfs.github.com/spec/v1\n";
    error = test::user_error_text([&] { verify_demo_files(dir); });
    EXPECT_NE(error.find("model.safetensors: 43 bytes, but"), std::string::npos) << error;
    fs::remove(dir + "/config.json");
    error = test::user_error_text([&] { verify_demo_files(dir); });
    EXPECT_NE(error.find(dir + "/config.json: missing"), std::string::npos) << error;
    fs::remove_all(fs::path(dir).parent_path());
}

// The number the documentation starts from, re-measured: the record's held-out problems (seed and
// count from quantlab.json, the operations of the demo schedule), evaluated now.
TEST(ShippedDemo, HeldOutExactMatchIsTheRecordedOneAndAtLeast99Percent) {
    const json v = shipped_record().at("validation");
    OpenedModel m = open_model("demo");
    const Dataset held_out = make_synthetic_dataset(demo_training_config().eval_domains, DataSplit::Validation,
                                                    v.at("seed").get<uint64_t>(), v.at("examples").get<int64_t>());
    NullJobSink sink;
    CancellationToken cancel;
    const EvalReport r = evaluate(*m.model, nullptr, held_out, EvalOptions{}, sink, cancel);
    ASSERT_TRUE(r.overall.exact_match.has_value());
    EXPECT_GE(*r.overall.exact_match, 0.99);
    EXPECT_EQ(r.overall.examples, v.at("examples").get<int64_t>());
    // Exact match is a count of problems: the same count, not merely a close fraction.
    EXPECT_EQ(std::llround(*r.overall.exact_match * r.overall.examples),
              std::llround(v.at("exact_match").get<double>() * r.overall.examples));
    for (const auto& [name, d] : r.domains) {
        ASSERT_TRUE(v.at("domains").contains(name)) << name;
        EXPECT_EQ(std::llround(*d.exact_match * d.examples),
                  std::llround(v["domains"][name].at("exact_match").get<double>() * d.examples))
            << name;
    }
}

}  // namespace
}  // namespace ql
