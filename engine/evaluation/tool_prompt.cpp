// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/tool_prompt.h"

namespace ql::evaluation {

std::string python_json_dumps(const nlohmann::ordered_json& value) {
    // Scalars: nlohmann escapes strings as json.dumps(ensure_ascii=False) does (\" \\ \b \f \n \r
    // \t, other control characters as lowercase \u00xx) and writes doubles shortest round-trip
    // with Python's exponent form (1e-05, 1e+16).
    if (value.is_object()) {
        std::string out = "{";
        bool first = true;
        for (const auto& [key, member] : value.items()) {
            out += (first ? "" : ", ") + nlohmann::ordered_json(key).dump() + ": " + python_json_dumps(member);
            first = false;
        }
        return out + "}";
    }
    if (value.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_json_dumps(value[i]);
        return out + "]";
    }
    return value.dump();
}

std::string tools_system_text(const std::string& system, const nlohmann::ordered_json& tools) {
    // Qwen2.5-7B-Instruct's chat template (tokenizer_config.json "chat_template", the `if tools`
    // branch), word for word.
    std::string out = system.empty() ? "" : system + "\n\n";
    out += "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
           "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const auto& tool : tools) out += "\n" + python_json_dumps(tool);
    out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
           "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    return out;
}

nlohmann::ordered_json conversation_with_tools_in_system(const EvalItem& item, const std::string& default_system) {
    nlohmann::ordered_json conversation = item.conversation();
    if (item.tools.is_null()) return conversation;
    if (!conversation.empty() && conversation[0]["role"] == "system") {
        conversation[0]["content"] = tools_system_text(conversation[0]["content"].get<std::string>(), item.tools);
        return conversation;
    }
    nlohmann::ordered_json with = nlohmann::ordered_json::array();
    with.push_back({{"role", "system"}, {"content", tools_system_text(default_system, item.tools)}});
    for (const auto& m : conversation) with.push_back(m);
    return with;
}

}  // namespace ql::evaluation
