// SPDX-License-Identifier: GPL-3.0-or-later
// main() of the test executables that CTest runs one suite per process (quantlab_add_test's
// ONE_PROCESS_PER_SUITE): exit 77 -- CTest's SKIP_RETURN_CODE for them -- when nothing failed but
// some test skipped, so that a suite with a skipped test never shows as passed; exit 1 when the
// filter matched no test at all (a renamed suite must not pass by running nothing).
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    const int failed = RUN_ALL_TESTS();
    if (failed != 0) return 1;
    if (testing::GTEST_FLAG(list_tests)) return 0;
    const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
    if (unit.test_to_run_count() == 0) {
        std::fprintf(stderr, "no test matches --gtest_filter=%s\n", testing::GTEST_FLAG(filter).c_str());
        return 1;
    }
    return unit.skipped_test_count() > 0 ? 77 : 0;
}
