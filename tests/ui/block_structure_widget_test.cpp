// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/block_structure_widget.h"

#include <gtest/gtest.h>

#include "engine/core/format_catalog.h"

namespace ql {
namespace {

QuantOptions optionsFor(const std::string& name) {
    QuantOptions o;
    o.format = name;
    return o;
}

TEST(BlockStructure, Nvfp4Has16ElementsUnderAnE4M3AndAnFp32Scale) {
    const BlockDiagram d = describeBlockStructure(format_info("nvfp4"), optionsFor("nvfp4"));
    EXPECT_EQ(d.blockSize, 16);
    EXPECT_EQ(d.elementLabel, "E2M1");
    ASSERT_EQ(d.scales.size(), 2);
    EXPECT_TRUE(d.scales[0].label.startsWith("E4M3"));
    EXPECT_EQ(d.scales[0].blocksPerScale, 1);
    EXPECT_TRUE(d.scales[1].label.startsWith("FP32"));
    EXPECT_EQ(d.scales[1].blocksPerScale, 0);
    EXPECT_TRUE(d.storage.contains("4.5 bits/element"));
}

TEST(BlockStructure, MxHas32ElementsUnderOneE8M0) {
    const BlockDiagram d = describeBlockStructure(format_info("mxfp6_e2m3"), optionsFor("mxfp6_e2m3"));
    EXPECT_EQ(d.blockSize, 32);
    ASSERT_EQ(d.scales.size(), 1);
    EXPECT_TRUE(d.scales[0].label.startsWith("E8M0"));
    EXPECT_TRUE(d.scales[0].detail.contains("2)"));  // emax of E2M3 is 2
    EXPECT_TRUE(d.storage.contains("6.25 bits/element"));
    QuantOptions rceil = optionsFor("mxfp6_e2m3");
    rceil.mx_scale = "rceil";
    EXPECT_TRUE(describeBlockStructure(format_info("mxfp6_e2m3"), rceil).scales[0].detail.contains("ceil"));
}

TEST(BlockStructure, IntFollowsGranularityAndAsymmetry) {
    QuantOptions o = optionsFor("int4");
    o.granularity = "group";
    o.group_size = 64;
    BlockDiagram d = describeBlockStructure(format_info("int4"), o);
    EXPECT_EQ(d.blockSize, 64);
    EXPECT_TRUE(d.storage.contains("4.5 bits/element"));
    o.group_size = 0;
    EXPECT_EQ(describeBlockStructure(format_info("int4"), o).blockSize, 128);  // the default group
    o.granularity = "tensor";
    o.asymmetric = true;
    d = describeBlockStructure(format_info("int4"), o);
    EXPECT_EQ(d.blockSize, 0);
    EXPECT_EQ(d.scales[0].blocksPerScale, 0);
    EXPECT_TRUE(d.scales[0].label.contains("zero point"));
}

TEST(BlockStructure, Nf4DoubleQuantizationAddsTwoLevels) {
    QuantOptions o = optionsFor("nf4");
    EXPECT_EQ(describeBlockStructure(format_info("nf4"), o).scales.size(), 1);
    o.double_quant = true;
    const BlockDiagram d = describeBlockStructure(format_info("nf4"), o);
    ASSERT_EQ(d.scales.size(), 3);
    EXPECT_EQ(d.scales[1].blocksPerScale, 256);
    EXPECT_TRUE(d.storage.contains("4.127"));
}

TEST(BlockStructure, GgufByteLayoutsMatchTheCatalogCost) {
    for (const FormatInfo& f : all_formats()) {
        if (f.family != "gguf") continue;
        SCOPED_TRACE(f.name);
        const BlockDiagram d = describeBlockStructure(f, optionsFor(f.name));
        int bytes = 0;
        for (const auto& field : d.bytes) bytes += field.bytes;
        EXPECT_DOUBLE_EQ(bytes * 8.0 / static_cast<double>(f.block_size), f.bits_per_element);
    }
    // The K-quants: sub-block scales under a super scale shared by 8 or 16 of them.
    const BlockDiagram q4k = describeBlockStructure(format_info("gguf_q4_k"), optionsFor("gguf_q4_k"));
    EXPECT_EQ(q4k.blockSize, 32);
    ASSERT_EQ(q4k.scales.size(), 2);
    EXPECT_EQ(q4k.scales[1].blocksPerScale, 8);
    EXPECT_TRUE(q4k.storage.contains("144 bytes per super-block of 256"));
    EXPECT_EQ(describeBlockStructure(format_info("gguf_q6_k"), optionsFor("gguf_q6_k")).scales[1].blocksPerScale, 16);
}

}  // namespace
}  // namespace ql
