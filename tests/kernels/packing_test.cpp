// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/packing.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

TEST(Packing, NibblesLowFirstIsModelOptimizerOrder) {
    const std::vector<uint8_t> codes = {1, 2, 3, 4, 5};
    std::vector<uint8_t> out(3), back(5);
    pack_nibbles(codes.data(), 1, 5, NibbleOrder::LowFirst, out.data());
    EXPECT_EQ(out[0], 0x21);
    EXPECT_EQ(out[1], 0x43);
    EXPECT_EQ(out[2], 0x05);
    unpack_nibbles(out.data(), 1, 5, NibbleOrder::LowFirst, back.data());
    EXPECT_TRUE(test::same_items(back, codes));
    pack_nibbles(codes.data(), 1, 5, NibbleOrder::HighFirst, out.data());
    EXPECT_EQ(out[0], 0x12);  // bitsandbytes: element 2i in the high nibble
    EXPECT_EQ(out[2], 0x50);
}

TEST(Packing, Fp6FourCodesInThreeBytes) {
    const std::vector<uint8_t> codes = {0x3F, 0x00, 0x2A, 0x15};
    std::vector<uint8_t> out(3), back(4);
    pack_fp6(codes.data(), 4, out.data());
    EXPECT_EQ(out[0], 0xFC);  // 111111 00
    EXPECT_EQ(out[1], 0x0A);  // 0000 1010
    EXPECT_EQ(out[2], 0x95);  // 10 010101
    unpack_fp6(out.data(), 4, back.data());
    EXPECT_TRUE(test::same_items(back, codes));
}

TEST(Packing, IntRowsRoundTripForEveryWidth) {
    std::mt19937 rng(7);
    for (int bits : {2, 3, 4, 8}) {
        const int64_t rows = 24, cols = 5;
        std::vector<uint8_t> codes(rows * cols);
        for (auto& c : codes) {
            const int v = static_cast<int>(rng() % (1u << bits)) - (1 << (bits - 1));  // signed range
            c = static_cast<uint8_t>(static_cast<int8_t>(v));
        }
        std::vector<uint8_t> packed(static_cast<size_t>(int_packed_rows(rows, bits) * cols)), back(codes.size());
        pack_int_rows(codes.data(), rows, cols, bits, packed.data());
        unpack_int_rows(packed.data(), rows, cols, bits, true, back.data());
        EXPECT_TRUE(test::same_items(back, codes)) << bits;
    }
    // AWQ layout: row 2i low nibble, row 2i+1 high nibble, two's complement.
    const std::vector<uint8_t> c = {static_cast<uint8_t>(-1), 3, static_cast<uint8_t>(-8), 7};  // [4, 1]
    std::vector<uint8_t> p(2);
    pack_int_rows(c.data(), 4, 1, 4, p.data());
    EXPECT_EQ(p[0], 0x3F);
    EXPECT_EQ(p[1], 0x78);
}

}  // namespace
}  // namespace ql::kernels
