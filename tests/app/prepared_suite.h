// SPDX-License-Identifier: GPL-3.0-or-later
// A test suite whose expensive preparation (quantizing real models, running the peers' Python)
// runs once for all its tests: Derived::prepare() fills the suite's scratch folder dir() and
// whatever the tests read; if it throws, every test of the suite fails with its message (a
// peer or model that cannot run fails, never skips). The folder is removed after the suite.
// Peer scripts that report named checks ({"name", "pass", "detail"}) are asserted through
// expect_checks.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace ql::test {

template <class Derived>
class PreparedSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        try {
            Derived::prepare();
        } catch (const std::exception& e) {
            setup_error() = e.what();
        }
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        if (!dir().empty()) std::filesystem::remove_all(dir(), ec);
    }
    void SetUp() override { ASSERT_TRUE(setup_error().empty()) << setup_error(); }

    static std::string& dir() { static std::string d; return d; }
    static std::string& setup_error() { static std::string e; return e; }
    static std::map<std::string, nlohmann::json>& checks() { static std::map<std::string, nlohmann::json> c; return c; }

    // Every check whose name starts with `prefix` passed, and there are at least `at_least` of them
    // (exactly that many with `exact`); each is printed with its detail.
    static void expect_checks(const std::string& prefix, size_t at_least, bool exact = false) {
        size_t n = 0;
        for (const auto& [name, c] : checks()) {
            if (name.rfind(prefix, 0) != 0) continue;
            ++n;
            EXPECT_TRUE(c["pass"].template get<bool>()) << name << ": " << c["detail"].template get<std::string>();
            std::printf("%s: %s\n", name.c_str(), c["detail"].template get<std::string>().c_str());
        }
        if (exact)
            EXPECT_EQ(n, at_least) << "checks named " << prefix << "*";
        else
            EXPECT_GE(n, at_least) << "checks named " << prefix << "* are missing";
    }
};

}  // namespace ql::test
