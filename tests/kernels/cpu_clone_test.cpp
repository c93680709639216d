// SPDX-License-Identifier: GPL-3.0-or-later
// Every CPU clone of the kernels (kernels/cpu_dispatch.h) that this machine can run: against the
// scalar references, and bit for bit against the x86-64 baseline clone on every entry point
// (fake quantization, encode, decode, statistics), with NaN, Inf, zeros, denormals and short row
// tails in the data. A clone the CPU cannot run is skipped with its name (the x86-64-v4 clone on
// AVX2-only machines): scripts/check-clone-instructions checks its instructions statically.
#include <functional>
#include <string>

#include "kernels/channel_reduce.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/half_rounding.h"
#include "kernels/integer_quant.h"
#include "kernels/mx.h"
#include "kernels/nf4.h"
#include "kernels/nvfp4.h"
#include "kernels/reference/reference_formats.h"
#include "kernels/scaled_fp8.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

// mixed_tensor with NaN, +-Inf, signed zeros and (with `huge`) the largest floats sprinkled in
// (not in every row: the rows without them keep finite block and channel statistics).
std::vector<float> data_with_specials(int64_t rows, int64_t cols, uint32_t seed, bool huge = true) {
    std::vector<float> x = test::mixed_tensor(rows, cols, seed);
    for (int64_t r = 0; r < rows; r += 3)
        for (int64_t c = (r * 7) % 13; c < cols; c += 53) {
            const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, huge ? 3.4e38f : 0.0f, huge ? -3.4e38f : -0.0f, -NAN};
            x[static_cast<size_t>(r * cols + c)] = specials[(r + c) % 7];
        }
    return x;
}

// Everything a kernel wrote, as bits.
using Bits = std::vector<uint32_t>;

void append(Bits& out, const std::vector<float>& v) {
    for (float f : v) out.push_back(test::bits_of(f));
}
void append(Bits& out, const std::vector<uint8_t>& v) { out.insert(out.end(), v.begin(), v.end()); }
void append(Bits& out, const std::vector<uint16_t>& v) { out.insert(out.end(), v.begin(), v.end()); }

struct Shape {
    int64_t rows, cols;
};

// Large enough for both threads, whole tiles and partial ones; tails of every block size.
const Shape kShapes[] = {{64, 1024}, {21, 100}, {3, 4144}, {1, 7}};

Bits run_nvfp4(const std::vector<float>& x, Shape s) {
    const RowBlocks L{s.rows, s.cols, kNvfp4Block};
    const float g = nvfp4_global_scale(finite_absmax(x.data(), L.elements()));
    std::vector<float> y(x.size()), d(x.size());
    std::vector<uint8_t> codes(x.size()), scales(static_cast<size_t>(L.block_count()));
    nvfp4_fake_quant(x.data(), y.data(), L, g);
    nvfp4_encode(x.data(), L, g, codes.data(), scales.data());
    nvfp4_decode(codes.data(), scales.data(), L, g, d.data());
    Bits b;
    append(b, y);
    append(b, codes);
    append(b, scales);
    append(b, d);
    return b;
}

Bits run_mx(const std::vector<float>& x, Shape s, MxElement e, MxScaleRule rule) {
    const RowBlocks L{s.rows, s.cols, kMxBlock};
    std::vector<float> y(x.size()), d(x.size());
    std::vector<uint8_t> codes(x.size()), scales(static_cast<size_t>(L.block_count()));
    mx_fake_quant(x.data(), y.data(), L, e, rule);
    mx_encode(x.data(), L, e, rule, codes.data(), scales.data());
    mx_decode(codes.data(), scales.data(), L, e, d.data());
    Bits b;
    append(b, y);
    append(b, codes);
    append(b, scales);
    append(b, d);
    return b;
}

// Per tensor, per channel along rows (inner > 1) and along columns (inner == 1).
Bits run_fp8(const std::vector<float>& x, Shape s, Fp8Kind k) {
    Bits b;
    for (const ChannelLayout L : {ChannelLayout{1, 1, s.rows * s.cols}, ChannelLayout{1, s.rows, s.cols},
                                  ChannelLayout{s.rows, s.cols, 1}}) {
        std::vector<float> amax(static_cast<size_t>(L.channels)), scales(amax.size());
        channel_finite_absmax(x.data(), L, amax.data());
        for (size_t c = 0; c < amax.size(); ++c) scales[c] = fp8_scale_for_amax(amax[c], k);
        std::vector<float> y(x.size()), d(x.size());
        std::vector<uint8_t> codes(x.size());
        fp8_fake_quant(x.data(), y.data(), L, scales.data(), k);
        fp8_encode(x.data(), L, scales.data(), k, codes.data());
        fp8_decode(codes.data(), L, scales.data(), k, d.data());
        append(b, amax);
        append(b, y);
        append(b, codes);
        append(b, d);
    }
    return b;
}

Bits run_int(const std::vector<float>& x, Shape s, IntFormat f) {
    Bits b;
    for (int64_t group : {32, 64, 128, 256, 48}) {
        const RowBlocks L{s.rows, s.cols, group};
        std::vector<float> y(x.size()), d(x.size());
        std::vector<uint8_t> codes(x.size());
        std::vector<IntParams> p(static_cast<size_t>(L.block_count()));
        int_fake_quant_groups(x.data(), y.data(), L, f);
        int_encode_groups(x.data(), L, f, codes.data(), p.data());
        int_decode_groups(codes.data(), p.data(), L, f, d.data());
        append(b, y);
        append(b, codes);
        append(b, d);
        for (const IntParams& q : p) b.insert(b.end(), {test::bits_of(q.scale), test::bits_of(q.zero_point)});
    }
    for (const ChannelLayout L : {ChannelLayout{1, 1, s.rows * s.cols}, ChannelLayout{1, s.rows, s.cols},
                                  ChannelLayout{s.rows, s.cols, 1}}) {
        std::vector<float> lo(static_cast<size_t>(L.channels)), hi(lo.size());
        channel_finite_range(x.data(), L, lo.data(), hi.data());
        std::vector<IntParams> p;
        for (size_t c = 0; c < lo.size(); ++c) p.push_back(int_params_for_range(lo[c], hi[c], f));
        std::vector<float> y(x.size()), d(x.size());
        std::vector<uint8_t> codes(x.size());
        int_fake_quant_channels(x.data(), y.data(), L, p.data(), f);
        int_encode_channels(x.data(), L, p.data(), f, codes.data());
        int_decode_channels(codes.data(), L, p.data(), f, d.data());
        append(b, lo);
        append(b, hi);
        append(b, y);
        append(b, codes);
        append(b, d);
    }
    return b;
}

Bits run_nf4(const std::vector<float>& x, int64_t block, bool double_quant) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size()), d(x.size()), absmax(static_cast<size_t>((n + block - 1) / block));
    std::vector<uint8_t> codes(x.size());
    if (double_quant)
        nf4_fake_quant_double(x.data(), y.data(), n, block);
    else
        nf4_fake_quant(x.data(), y.data(), n, block);
    nf4_encode(x.data(), n, block, codes.data(), absmax.data());
    nf4_decode(codes.data(), absmax.data(), n, block, d.data());
    Bits b;
    append(b, y);
    append(b, codes);
    append(b, absmax);
    append(b, d);
    return b;
}

Bits run_half(const std::vector<float>& x, HalfKind k) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size()), d(x.size());
    std::vector<uint16_t> codes(x.size());
    half_round_trip(x.data(), y.data(), n, k);
    half_encode(x.data(), n, k, codes.data());
    half_decode(codes.data(), n, k, d.data());
    Bits b;
    append(b, y);
    append(b, codes);
    append(b, d);
    return b;
}

struct KernelCase {
    std::string name;
    std::function<Bits(const std::vector<float>&, Shape)> run;
};

std::vector<KernelCase> kernel_cases() {
    std::vector<KernelCase> cases;
    cases.push_back({"nvfp4", run_nvfp4});
    const std::pair<MxElement, const char*> mx[] = {{MxElement::E4M3, "mxfp8_e4m3"}, {MxElement::E5M2, "mxfp8_e5m2"},
                                                     {MxElement::E3M2, "mxfp6_e3m2"}, {MxElement::E2M3, "mxfp6_e2m3"},
                                                     {MxElement::E2M1, "mxfp4"},      {MxElement::Int8, "mxint8"}};
    for (auto [e, name] : mx)
        for (MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::RoundUp})
            cases.push_back({std::string(name) + (rule == MxScaleRule::Floor ? "/floor" : "/rceil"),
                             [e = e, rule](const std::vector<float>& x, Shape s) { return run_mx(x, s, e, rule); }});
    for (Fp8Kind k : {Fp8Kind::E4M3, Fp8Kind::E5M2})
        cases.push_back({k == Fp8Kind::E4M3 ? "fp8_e4m3" : "fp8_e5m2",
                         [k](const std::vector<float>& x, Shape s) { return run_fp8(x, s, k); }});
    for (int bits : {8, 4, 2})
        for (bool asym : {false, true})
            cases.push_back({"int" + std::to_string(bits) + (asym ? "/asym" : "/sym"),
                             [bits, asym](const std::vector<float>& x, Shape s) { return run_int(x, s, {bits, asym}); }});
    for (int64_t block : {64, 128, 37})
        for (bool dq : {false, true})
            cases.push_back({"nf4/" + std::to_string(block) + (dq ? "/double" : ""),
                             [block, dq](const std::vector<float>& x, Shape) { return run_nf4(x, block, dq); }});
    cases.push_back({"bf16", [](const std::vector<float>& x, Shape) { return run_half(x, HalfKind::BF16); }});
    cases.push_back({"fp16", [](const std::vector<float>& x, Shape) { return run_half(x, HalfKind::FP16); }});
    return cases;
}

class CpuCloneTest : public ::testing::TestWithParam<CpuClone> {
protected:
    void SetUp() override {
        if (!cpu_clone_supported(GetParam()))
            GTEST_SKIP() << "this CPU cannot run the " << cpu_clone_name(GetParam()) << " clone ("
                         << cpu_model_name() << ")";
        ASSERT_TRUE(set_cpu_clone(GetParam()));
    }
    void TearDown() override { set_cpu_clone(default_cpu_clone()); }
};

TEST_P(CpuCloneTest, RunsTheCloneItWasGiven) { EXPECT_EQ(active_cpu_clone(), GetParam()); }

TEST_P(CpuCloneTest, EveryKernelEqualsTheBaselineCloneBitForBit) {
    const CpuClone clone = GetParam();
    uint32_t seed = 100;
    for (const Shape s : kShapes) {
        const std::vector<float> x = data_with_specials(s.rows, s.cols, seed++);
        for (const KernelCase& k : kernel_cases()) {
            ASSERT_TRUE(set_cpu_clone(CpuClone::Baseline));
            const Bits want = k.run(x, s);
            ASSERT_TRUE(set_cpu_clone(clone));
            const Bits got = k.run(x, s);
            ASSERT_EQ(got.size(), want.size()) << k.name;
            size_t first = got.size();
            for (size_t i = 0; i < got.size() && first == got.size(); ++i)
                if (got[i] != want[i]) first = i;
            EXPECT_EQ(first, got.size()) << k.name << " on " << s.rows << "x" << s.cols << ": word " << first
                                         << " is 0x" << std::hex << got[first] << ", the baseline clone wrote 0x"
                                         << want[first];
        }
    }
}

// The formats with scalar references (kernels/reference), under this clone. Without the largest
// floats: an asymmetric integer group holding both +-3.4e38 has a finite range beyond FLT_MAX
// (scale +Inf), where FORMATS.md defines nothing and the reference and the kernels (before and
// after the clones alike) give different NaN/Inf; the test above keeps those values.
TEST_P(CpuCloneTest, BlockFormatsEqualTheReferences) {
    const auto x = data_with_specials(64, 1024, 7, /*huge=*/false);
    const Shape s{64, 1024};
    {
        const float g = nvfp4_global_scale(finite_absmax(x.data(), 64 * 1024));
        std::vector<float> y(x.size());
        nvfp4_fake_quant(x.data(), y.data(), RowBlocks{s.rows, s.cols, kNvfp4Block}, g);
        EXPECT_TRUE(test::same_values(y, reference::nvfp4(x, s.rows, s.cols, g).values)) << "nvfp4";
    }
    const std::pair<MxElement, reference::Element> mx[] = {{MxElement::E4M3, reference::Element::E4M3},
                                                            {MxElement::E5M2, reference::Element::E5M2},
                                                            {MxElement::E3M2, reference::Element::E3M2},
                                                            {MxElement::E2M3, reference::Element::E2M3},
                                                            {MxElement::E2M1, reference::Element::E2M1},
                                                            {MxElement::Int8, reference::Element::E4M3}};
    for (auto [e, ref] : mx)
        for (bool round_up : {false, true}) {
            std::vector<float> y(x.size());
            mx_fake_quant(x.data(), y.data(), RowBlocks{s.rows, s.cols, kMxBlock}, e,
                          round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor);
            const auto r = reference::mx(x, s.rows, s.cols, ref, e == MxElement::Int8, round_up);
            EXPECT_TRUE(test::same_values(y, r.values)) << "mx element " << static_cast<int>(e);
        }
    for (int bits : {8, 4})
        for (bool asym : {false, true}) {
            std::vector<float> y(x.size());
            int_fake_quant_groups(x.data(), y.data(), RowBlocks{s.rows, s.cols, 128}, IntFormat{bits, asym});
            EXPECT_TRUE(test::same_values(y, reference::integer(x, s.rows, s.cols, bits, asym, 128).values))
                << "int" << bits << (asym ? " asym" : " sym");
        }
    {
        std::vector<float> y(x.size());
        nf4_fake_quant(x.data(), y.data(), static_cast<int64_t>(x.size()), kNf4Block);
        EXPECT_TRUE(test::same_values(y, reference::nf4(x, kNf4Block, kNf4Codebook).values)) << "nf4";
    }
}

TEST_P(CpuCloneTest, PerTensorFp8EqualsTheReference) {
    auto x = test::mixed_tensor(64, 1000, 9);
    for (auto& v : x) v *= 1e-3f;
    const int64_t n = static_cast<int64_t>(x.size());
    for (auto [kind, ref] : {std::pair{Fp8Kind::E4M3, reference::Element::E4M3},
                             std::pair{Fp8Kind::E5M2, reference::Element::E5M2}}) {
        const float scale = fp8_scale_for_amax(finite_absmax(x.data(), n), kind);
        std::vector<float> y(x.size());
        fp8_fake_quant(x.data(), y.data(), ChannelLayout{1, 1, n}, &scale, kind);
        EXPECT_TRUE(test::same_values(y, reference::fp8_tensor(x, ref).values));
    }
}

INSTANTIATE_TEST_SUITE_P(Clones, CpuCloneTest, ::testing::ValuesIn(cpu_clones()),
                         [](const ::testing::TestParamInfo<CpuClone>& info) {
                             std::string name = cpu_clone_name(info.param);
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

TEST(CpuDispatch, RefusesAndReportsClonesTheCpuCannotRun) {
    const CpuClone before = active_cpu_clone();
    for (CpuClone c : cpu_clones()) {
        EXPECT_EQ(set_cpu_clone(c), cpu_clone_supported(c)) << cpu_clone_name(c);
        EXPECT_EQ(active_cpu_clone(), cpu_clone_supported(c) ? c : before) << cpu_clone_name(c);
        set_cpu_clone(before);
    }
    EXPECT_TRUE(cpu_clone_supported(CpuClone::Baseline));
    EXPECT_TRUE(cpu_clone_supported(default_cpu_clone()));
    EXPECT_FALSE(cpu_model_name().empty());
}

}  // namespace
}  // namespace ql::kernels
