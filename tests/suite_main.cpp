// SPDX-License-Identifier: GPL-3.0-or-later
// main() of the test executables that CTest runs one suite per process (quantlab_add_test's
// ONE_PROCESS_PER_SUITE): exit 77 -- CTest's SKIP_RETURN_CODE for them -- when nothing failed but
// some test skipped, so that a suite with a skipped test never shows as passed.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    const int failed = RUN_ALL_TESTS();
    if (failed != 0) return 1;
    return testing::UnitTest::GetInstance()->skipped_test_count() > 0 ? 77 : 0;
}
