// SPDX-License-Identifier: GPL-3.0-or-later
// check_experiment_recipes: every cell's recipe (and every menu entry of a mixed cell) is planned
// against its model before the first run, so a recipe that misses the model is one error naming
// the cell, the recipe and the reason, not the failure of a run in the middle of the grid.
#include <gtest/gtest.h>

#include <string>

#include "engine/api/experiment_api.h"
#include "engine/core/errors.h"
#include "engine/experiments/experiment_spec.h"

namespace ql::experiments {
namespace {

const std::string kTinyBert = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/bert";

std::string recipes_error(const std::string& text) {
    try {
        check_experiment_recipes(parse_experiment(text, "r.json"));
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

// A recipe whose weight pattern names BERT's FFN (intermediate.dense): the demo decoder has none.
const char* kDemoWithABertRecipe = R"({"quantlab_experiment": 1, "name": "r",
  "base": {"model": "demo", "method": "ptq"},
  "grid": {"recipe": ["NVFP4_DEFAULT", "MXFP8",
    {"name": "INT8_BERT_FFN", "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
      {"quantizer_name": "*intermediate*weight_quantizer", "cfg": {"format": "int8", "granularity": "channel"}}]}]},
  "metrics": ["kl", "bits_per_parameter"]})";

TEST(ExperimentRecipeCheck, ARecipeMatchingNoLayerOfTheDemoNamesTheCellRecipeAndPattern) {
    const std::string e = recipes_error(kDemoWithABertRecipe);
    EXPECT_NE(e.find("experiment 'r.json'"), std::string::npos) << e;
    EXPECT_NE(e.find("cell recipe=INT8_BERT_FFN"), std::string::npos) << e;
    EXPECT_NE(e.find("recipe INT8_BERT_FFN (grid.recipe"), std::string::npos) << e;
    EXPECT_NE(e.find("does not fit the model demo"), std::string::npos) << e;
    EXPECT_NE(e.find("'*intermediate*weight_quantizer' matches no quantizer of the model"), std::string::npos) << e;
    // The cells before it fit: the error is the third cell's, not the first's.
    EXPECT_EQ(e.find("NVFP4_DEFAULT"), std::string::npos) << e;
}

TEST(ExperimentRecipeCheck, AGroupSizeTheDemoCannotTakeIsRefusedBeforeAnyRun) {
    // The demo (resources/demo/config.json) is 192 wide: groups of 256 are longer than q_proj's
    // input (groups that leave a short last group, like 48 on the 512-wide MLP, are accepted).
    const std::string e = recipes_error(R"({"quantlab_experiment": 1, "name": "r",
      "base": {"model": "demo", "method": "qad", "recipe":
        {"name": "INT4_G256", "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
          {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 256}}]}},
      "metrics": ["kl"]})");
    EXPECT_NE(e.find("cell base: recipe INT4_G256 (base.recipe) does not fit the model demo"), std::string::npos) << e;
    EXPECT_NE(e.find("group size 256 is longer than the last dimension (192)"), std::string::npos) << e;
}

TEST(ExperimentRecipeCheck, AnMlpOnlyRecipeOnABertEncoderIsRefusedForItsCell) {
    // The failure the MiniLM bits-frontier met at run 3: *mlp* names a decoder's modules.
    const std::string e = recipes_error(R"({"quantlab_experiment": 1, "name": "r",
      "base": {"model": ")" + kTinyBert + R"(", "method": "ptq", "data": "/s.txt"},
      "grid": {"recipe": ["FP8_DEFAULT", "NVFP4_MLP_ONLY"]}, "metrics": ["cosine_mean"]})");
    EXPECT_NE(e.find("cell recipe=NVFP4_MLP_ONLY: recipe NVFP4_MLP_ONLY (grid.recipe (NVFP4_MLP_ONLY)) does not fit the model " + kTinyBert),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("*mlp*"), std::string::npos) << e;
    EXPECT_NE(e.find("matches no quantizer of the model"), std::string::npos) << e;
}

TEST(ExperimentRecipeCheck, AMixedCellsMenuEntriesAreCheckedToo) {
    const std::string e = recipes_error(R"({"quantlab_experiment": 1, "name": "r",
      "base": {"model": ")" + kTinyBert + R"(", "method": "mixed", "bits": 12, "data": "/s.txt"},
      "grid": {"menu": [["NVFP4", "BF16"], ["NVFP4_MLP_ONLY", "BF16"]]}, "metrics": ["cosine_mean"]})");
    EXPECT_NE(e.find("recipe NVFP4_MLP_ONLY (grid.menu"), std::string::npos) << e;
    EXPECT_NE(e.find("entry NVFP4_MLP_ONLY"), std::string::npos) << e;
    EXPECT_NE(e.find("*mlp*"), std::string::npos) << e;
}

TEST(ExperimentRecipeCheck, EveryTemplateFitsTheDemoAndTheTinyBertTakesAllButGroupsOf64) {
    for (const std::string& name : experiment_template_names()) EXPECT_NO_THROW(check_experiment_recipes(load_experiment(name))) << name;
    ExperimentOverrides o;
    o.model = kTinyBert;
    o.encoder = true;
    o.data = "/data/sentences.txt";
    for (const char* name : {"qad-vs-qat", "bits-frontier"}) EXPECT_NO_THROW(check_experiment_recipes(load_experiment(name, o))) << name;
    // The test BERT is 32 wide: nvfp4-vs-mxfp4's INT4 with groups of 64 cannot quantize it (the
    // real MiniLM, 384 wide, can), and that cell is named before any run.
    std::string e = "no error";
    try {
        check_experiment_recipes(load_experiment("nvfp4-vs-mxfp4", o));
    } catch (const UserError& x) {
        e = x.what();
    }
    EXPECT_NE(e.find("cell recipe=INT4_W4A4_G64: recipe INT4_W4A4_G64"), std::string::npos) << e;
    EXPECT_NE(e.find("group size 64 is longer than the last dimension (32)"), std::string::npos) << e;
}

}  // namespace
}  // namespace ql::experiments
