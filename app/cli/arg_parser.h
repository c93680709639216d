// SPDX-License-Identifier: GPL-3.0-or-later
// A small strict parser for `--name value` options and `--flag` switches: unknown options,
// missing values and bad numbers are UserErrors naming the option.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ql::cli {

class ArgParser {
public:
    // value_options take one argument; flags take none. Positional arguments are collected.
    ArgParser(std::string command, std::set<std::string> value_options, std::set<std::string> flags);

    void parse(const std::vector<std::string>& args);

    bool has(const std::string& option) const;
    std::optional<std::string> value(const std::string& option) const;
    std::string required(const std::string& option) const;
    int64_t integer(const std::string& option, int64_t fallback) const;
    double number(const std::string& option, double fallback) const;
    const std::vector<std::string>& positional() const { return positional_; }

private:
    std::string command_;
    std::set<std::string> value_options_, flags_;
    std::map<std::string, std::string> values_;
    std::set<std::string> seen_flags_;
    std::vector<std::string> positional_;
};

}  // namespace ql::cli
