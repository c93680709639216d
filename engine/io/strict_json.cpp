// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/strict_json.h"

#include <cstring>
#include <unordered_set>
#include <vector>

#include "engine/io/utf8.h"

namespace ql {

nlohmann::json parse_strict_json(const char* begin, const char* end) {
    using nlohmann::json;
    if (const void* nul = std::memchr(begin, '\0', static_cast<size_t>(end - begin)))
        throw StrictJsonError("NUL byte at byte " + std::to_string(static_cast<const char*>(nul) - begin));
    std::vector<std::unordered_set<std::string>> keys;  // of each open object
    json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                if (depth >= kStrictJsonMaxDepth)
                    throw StrictJsonError("nested deeper than " + std::to_string(kStrictJsonMaxDepth) + " levels");
                if (event == json::parse_event_t::object_start) keys.emplace_back();
                break;
            case json::parse_event_t::key: {
                const std::string& k = parsed.get_ref<const std::string&>();
                if (!keys.back().insert(k).second) throw StrictJsonError("duplicate key " + quoted_name(k));
                break;
            }
            case json::parse_event_t::object_end:
                keys.pop_back();
                break;
            default:
                break;
        }
        return true;
    };
    try {
        return json::parse(begin, end, cb);
    } catch (const json::exception& e) {
        // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep the position and reason.
        std::string what = e.what();
        if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
        throw StrictJsonError(what);
    }
}

std::string quoted_name(const std::string& name) {
    std::string q = nlohmann::json(valid_utf8(name) ? name : std::string("<not UTF-8>")).dump();
    if (q.size() > 200) q = q.substr(0, 180) + "...\"";
    return q;
}

}  // namespace ql
