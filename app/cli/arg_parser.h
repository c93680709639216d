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
    // Every value given for a repeatable option (--tensor-type A --tensor-type B), in order;
    // value() returns the last one.
    std::vector<std::string> values(const std::string& option) const;
    int64_t integer(const std::string& option, int64_t fallback) const;
    double number(const std::string& option, double fallback) const;
    // An integer that must be > 0 when given; 0 when absent (the request's "use the default").
    // UserError "<command>: <option> must be a positive integer".
    int64_t positive_integer(const std::string& option) const;
    // --seed: an integer >= 0, 0 when absent. UserError "<command>: --seed must not be negative".
    uint64_t seed() const;
    const std::vector<std::string>& positional() const { return positional_; }

private:
    std::string command_;
    std::set<std::string> value_options_, flags_;
    std::map<std::string, std::string> values_;
    std::map<std::string, std::vector<std::string>> repeated_;
    std::set<std::string> seen_flags_;
    std::vector<std::string> positional_;
};

// "a,b,,c" -> {"a", "b", "c"}: the items of a comma-separated option value, empty items dropped.
std::vector<std::string> split_list(const std::string& s);

}  // namespace ql::cli
