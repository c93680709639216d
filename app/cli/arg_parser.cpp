// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/arg_parser.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "engine/core/errors.h"

namespace ql::cli {

ArgParser::ArgParser(std::string command, std::set<std::string> value_options, std::set<std::string> flags)
    : command_(std::move(command)), value_options_(std::move(value_options)), flags_(std::move(flags)) {}

void ArgParser::parse(const std::vector<std::string>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0 || a == "--") {
            positional_.push_back(a);
            continue;
        }
        std::string name = a, inline_value;
        bool has_inline = false;
        if (const auto eq = a.find('='); eq != std::string::npos) {
            name = a.substr(0, eq);
            inline_value = a.substr(eq + 1);
            has_inline = true;
        }
        if (flags_.count(name)) {
            if (has_inline) throw UserError(command_ + ": option " + name + " takes no value");
            seen_flags_.insert(name);
        } else if (value_options_.count(name)) {
            if (has_inline) {
                values_[name] = inline_value;
            } else {
                if (i + 1 >= args.size()) throw UserError(command_ + ": option " + name + " needs a value");
                values_[name] = args[++i];
            }
            repeated_[name].push_back(values_[name]);
        } else {
            throw UserError(command_ + ": unknown option " + name);
        }
    }
}

bool ArgParser::has(const std::string& option) const {
    return seen_flags_.count(option) > 0 || values_.count(option) > 0;
}

std::optional<std::string> ArgParser::value(const std::string& option) const {
    const auto it = values_.find(option);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> ArgParser::values(const std::string& option) const {
    const auto it = repeated_.find(option);
    return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

std::string ArgParser::required(const std::string& option) const {
    const auto v = value(option);
    if (!v) throw UserError(command_ + ": missing required option " + option);
    return *v;
}

int64_t ArgParser::integer(const std::string& option, int64_t fallback) const {
    const auto v = value(option);
    if (!v) return fallback;
    errno = 0;
    char* end = nullptr;
    const long long r = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno == ERANGE)
        throw UserError(command_ + ": option " + option + " expects an integer, got '" + *v + "'");
    return r;
}

double ArgParser::number(const std::string& option, double fallback) const {
    const auto v = value(option);
    if (!v) return fallback;
    errno = 0;
    char* end = nullptr;
    const double r = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || errno == ERANGE)
        throw UserError(command_ + ": option " + option + " expects a number, got '" + *v + "'");
    return r;
}

int64_t ArgParser::positive_integer(const std::string& option) const {
    const int64_t v = integer(option, 0);
    if (v < 0 || (has(option) && v == 0)) throw UserError(command_ + ": " + option + " must be a positive integer");
    return v;
}

uint64_t ArgParser::seed() const {
    const int64_t v = integer("--seed", 0);
    if (v < 0) throw UserError(command_ + ": --seed must not be negative");
    return static_cast<uint64_t>(v);
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

}  // namespace ql::cli
