// SPDX-License-Identifier: GPL-3.0-or-later
// The weight clipping search (engine/ptq/weight_clipping.h) behind the weight calibrators "mse"
// and "imatrix_mse": the choice equals an exhaustive search per cell, the importance moves it,
// the result is on the format's grid, and the PTQ pipeline pins it.
#include "engine/ptq/weight_clipping.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include "engine/calib/importance_collector.h"
#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/ptq/weight_grid.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

using test::user_error_text;

QuantSpec spec_for(const std::string& format, const std::vector<int64_t>& shape, const std::string& granularity = "",
                   int64_t group = 0) {
    QuantOptions o;
    o.format = format;
    o.granularity = granularity;
    o.group_size = group;
    return resolve_spec(o, shape);
}

// Heavy-tailed rows: Student-t-like (normal / sqrt(chi2)), seeded.
at::Tensor heavy_tailed(int64_t rows, int64_t cols, uint64_t seed) {
    at::manual_seed(static_cast<int64_t>(seed));
    const at::Tensor n = at::randn({rows, cols});
    const at::Tensor d = at::randn({rows, cols, 3}).pow(2).mean(-1).sqrt();
    return (n / d * 0.02).contiguous();
}

TEST(WeightClipping, EachCellGetsTheBestMultiplierOfTheGrid) {
    const at::Tensor w = heavy_tailed(6, 64, 1);
    const QuantSpec s = spec_for("int4", {6, 64}, "channel");
    const WeightClipping r = search_weight_clipping(w, s, {});
    ASSERT_EQ(r.multipliers.size(), 6u);  // one per output channel
    for (int64_t row = 0; row < 6; ++row) {
        // Exhaustively: the first multiplier with the least squared error of this row.
        double best = INFINITY;
        float best_m = 0;
        for (float m : clipping_candidates()) {
            const at::Tensor q = WeightGrid(w * m, s).quantize(w);
            const double e = (w[row] - q[row]).to(at::kDouble).pow(2).sum().item<double>();
            if (e < best) {
                best = e;
                best_m = m;
            }
        }
        EXPECT_EQ(r.multipliers[static_cast<size_t>(row)], best_m) << row;
        EXPECT_NEAR((w[row] - r.quantized[row]).to(at::kDouble).pow(2).sum().item<double>(), best, 1e-12) << row;
    }
    EXPECT_LE(r.error_after, r.error_before);  // m = 1 (round to nearest) is a candidate
    // On the format's grid: quantizing the result again changes nothing.
    EXPECT_TRUE(at::equal(fake_quantize(r.quantized, s), r.quantized));
}

TEST(WeightClipping, ImportanceKeepsImportantOutliersUnclipped) {
    // One row, int4 per channel (step = amax / 7): two outliers of 0.1 and 254 values of 0.0072,
    // just past half a step at m = 1, so that round-to-nearest costs every small value ~0.007.
    at::Tensor w = at::full({1, 256}, 0.0072f);
    for (int64_t j = 0; j < 256; j += 2) w[0][j] = -0.0072f;
    w[0][0] = 0.1f;
    w[0][1] = -0.1f;
    const QuantSpec s = spec_for("int4", {1, 256}, "channel");
    const WeightClipping plain = search_weight_clipping(w, s, {});
    EXPECT_LT(plain.multipliers[0], 1.0f);  // unweighted: clipping the outliers wins
    EXPECT_LT(plain.quantized[0][0].item<float>(), 0.1f);
    std::vector<float> imp(256, 1.0f);
    imp[0] = imp[1] = 1.0e4f;  // their input columns carry huge activations
    const WeightClipping weighted = search_weight_clipping(w, s, imp);
    EXPECT_EQ(weighted.multipliers[0], 1.0f);
    EXPECT_TRUE(at::equal(weighted.quantized, fake_quantize(w, s)));
}

TEST(WeightClipping, BlockFormatsSearchEveryBlockAndKeepNvfp4sGlobalScale) {
    const at::Tensor w = heavy_tailed(4, 64, 3);
    for (const std::string f : {"nvfp4", "mxfp4", "nf4"}) {
        const QuantSpec s = spec_for(f, {4, 64});
        const WeightClipping r = search_weight_clipping(w, s, {});
        EXPECT_EQ(static_cast<int64_t>(r.multipliers.size()), 4 * 64 / s.block) << f;
        EXPECT_LE(r.error_after, r.error_before) << f;
    }
    const QuantSpec group = spec_for("int4", {4, 64}, "group", 32);
    EXPECT_EQ(search_weight_clipping(w, group, {}).multipliers.size(), 8u);
    EXPECT_EQ(search_weight_clipping(w, spec_for("fp8_e4m3", {4, 64}), {}).multipliers.size(), 1u);
}

TEST(WeightClipping, RefusesWhatItCannotSearch) {
    const at::Tensor w = heavy_tailed(2, 64, 4);
    EXPECT_NE(user_error_text([&] { search_weight_clipping(w, spec_for("gguf_q4_0", {2, 64}), {}); }).find("computes its own block scales"),
              std::string::npos);
    EXPECT_NE(user_error_text([&] { search_weight_clipping(w, spec_for("int8", {2, 64}), std::vector<float>(3, 1)); })
                  .find("3 importance values for 64 input columns"),
              std::string::npos);
    std::vector<float> bad(64, 1);
    bad[3] = -1;
    EXPECT_NE(user_error_text([&] { search_weight_clipping(w, spec_for("int8", {2, 64}), bad); }).find("finite and >= 0"),
              std::string::npos);
}

TEST(WeightClipping, PtqPinsTheImatrixWeightedSearch) {
    const std::string recipe = R"({"algorithm": "max", "calibration": {"samples": 8}, "quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "channel", "calibrator": "imatrix_mse"}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
    OpenedModel m = open_model(test::tiny_llama());
    QuantizedModel q(*m.model, parse_recipe(recipe, "clip recipe"));
    NullJobSink sink;
    CancellationToken cancel;
    const Dataset calib = test::tokens_for(m, 8, 0);
    // Without an importance matrix: a UserError saying where to get one.
    EXPECT_NE(user_error_text([&] { run_ptq_pipeline(q, calib, PtqOptions{}, sink, cancel); }).find("needs an importance matrix"),
              std::string::npos);
    OpenedModel m2 = open_model(test::tiny_llama());
    QuantizedModel q2(*m2.model, parse_recipe(recipe, "clip recipe"));
    ImportanceCollection c;
    const ImportanceMatrix im = collect_importance(*m2.model, calib, c, sink, cancel);
    PtqOptions o;
    o.imatrix = &im;
    const PtqResult r = run_ptq_pipeline(q2, calib, o, sink, cancel);
    for (const LayerPtqReport& l : r.layers) EXPECT_EQ(l.method, "imatrix_mse") << l.layer;
    LayerQuantizer* v = q2.find("model.layers.1.self_attn.v_proj");
    ASSERT_TRUE(v->weight_pinned());
    const std::vector<float> imp = im.find("blk.1.attn_v.weight")->mean_sq();
    const at::Tensor w = v->layer().weight.detach();
    const at::Tensor pinned = v->quantized_weight();
    EXPECT_TRUE(at::equal(pinned, search_weight_clipping(w, v->weight_spec(), imp).quantized));
    auto weighted_error = [&](const at::Tensor& qw) {
        return ((w - qw).pow(2) * at::tensor(at::ArrayRef<float>(imp)).unsqueeze(0)).sum().item<double>();
    };
    EXPECT_LE(weighted_error(pinned), weighted_error(fake_quantize(w, v->weight_spec())));
}

}  // namespace
}  // namespace ql
