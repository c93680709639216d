// SPDX-License-Identifier: GPL-3.0-or-later
// Models in the local Hugging Face cache open by their id, offline, as huggingface_hub lays the
// cache out (models--owner--name/refs/<branch> -> snapshots/<commit>/ with files linked to blobs/).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;

const std::string kModels = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/";

// Sets an environment variable for the scope of a test.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

// A cache holding the golden qwen3 model as "test-org/tiny-qwen3" at two commits, main -> the second.
std::string make_cache() {
    const fs::path cache = fs::temp_directory_path() / ("quantlab-hf-cache-" + std::to_string(::getpid()));
    fs::remove_all(cache);
    const fs::path repo = cache / "models--test-org--tiny-qwen3";
    fs::create_directories(repo / "blobs");
    fs::create_directories(repo / "refs");
    for (const char* commit : {"1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"}) {
        const fs::path snap = repo / "snapshots" / commit;
        fs::create_directories(snap);
        for (const char* f : {"config.json", "model.safetensors"}) {
            const fs::path blob = repo / "blobs" / (std::string(commit).substr(0, 8) + "-" + f);
            fs::copy_file(kModels + "qwen3/" + f, blob, fs::copy_options::overwrite_existing);
            fs::create_symlink(fs::relative(blob, snap), snap / f);
        }
    }
    std::ofstream(repo / "refs" / "main") << "2222222222222222222222222222222222222222";
    return cache.string();
}

TEST(HuggingFaceCache, ModelIdsResolveToTheSnapshotOfTheirRevision) {
    const std::string cache = make_cache();
    const ScopedEnv hub("HF_HUB_CACHE", cache);
    const std::string repo = cache + "/models--test-org--tiny-qwen3/snapshots/";
    EXPECT_EQ(resolve_model_path("test-org/tiny-qwen3"), repo + "2222222222222222222222222222222222222222");
    EXPECT_EQ(resolve_model_path("test-org/tiny-qwen3@1111111111111111111111111111111111111111"),
              repo + "1111111111111111111111111111111111111111");
    const OpenedModel m = open_model("test-org/tiny-qwen3");
    EXPECT_EQ(m.model->config().model_type, "qwen3");
    EXPECT_EQ(m.data.model_name, "test-org/tiny-qwen3");
    // Not in the cache: the message says where it looked and that nothing is downloaded.
    const std::string missing = test::user_error_text([] { resolve_model_path("other-org/absent"); });
    EXPECT_NE(missing.find("models--other-org--absent does not exist; QuantLab does not download"), std::string::npos) << missing;
    const std::string no_rev = test::user_error_text([] { resolve_model_path("test-org/tiny-qwen3@v9"); });
    EXPECT_NE(no_rev.find("no snapshot for revision 'v9'"), std::string::npos) << no_rev;
    // Paths and non-ids pass through untouched.
    EXPECT_EQ(resolve_model_path(kModels + "qwen3"), kModels + "qwen3");
    EXPECT_EQ(resolve_model_path("not/an/id"), "not/an/id");
    fs::remove_all(cache);
}

TEST(HuggingFaceCache, TheCacheFolderFollowsHuggingFaceHubsEnvironment) {
    const ScopedEnv a("HF_HUB_CACHE", "");
    const ScopedEnv b("HUGGINGFACE_HUB_CACHE", "");
    const ScopedEnv c("XDG_CACHE_HOME", "");
    {
        const ScopedEnv home("HF_HOME", "/data/hf");
        EXPECT_EQ(hugging_face_hub_cache(), "/data/hf/hub");
        const ScopedEnv hub("HF_HUB_CACHE", "/fast/hub");
        EXPECT_EQ(hugging_face_hub_cache(), "/fast/hub");
    }
    const ScopedEnv home("HF_HOME", "");
    const ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(hugging_face_hub_cache(), "/xdg/huggingface/hub");
}

}  // namespace
}  // namespace ql
