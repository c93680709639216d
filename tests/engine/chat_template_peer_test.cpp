// SPDX-License-Identifier: GPL-3.0-or-later
// Every chat template llama.cpp ships (models/templates of the llama.cpp that scripts/setup-peers
// unpacked), every snippet of tests/data/chat_template_snippets.txt and 300 seeded random templates
// (tests/peers/chat_template_random.py), rendered by QuantLab for the conversations of
// tests/data/chat_template_cases.json, against transformers' own rendering
// (tests/peers/chat_template_peer.py: render_jinja_template, i.e. apply_chat_template's Jinja
// environment): byte-equal text, or both raise. QuantLab renders everything here first and
// writes one JSON file; the peer script then runs once for all of it. Fails (never skips) when the
// peers venv or the template folder is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/chat_template.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

using json = nlohmann::ordered_json;

std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// tests/data/chat_template_snippets.txt: "### name" starts a snippet, the newline before the next
// header is not part of it (as chat_template_peer.py reads it).
std::vector<std::pair<std::string, std::string>> read_snippets(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::vector<std::string> lines;
    for (size_t pos = 0;;) {
        const size_t end = text.find('\n', pos);
        lines.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    bool open = false;
    std::string name;
    std::vector<std::string> body;
    auto flush = [&](bool last) {
        if (!open) return;
        if (last && !body.empty() && body.back().empty()) body.pop_back();
        std::string s;
        for (size_t k = 0; k < body.size(); ++k) s += (k ? "\n" : "") + body[k];
        out.emplace_back(name, s);
    };
    for (const std::string& l : lines) {
        if (l.rfind("### ", 0) == 0) {
            flush(false);
            open = true;
            name = l.substr(4);
            body.clear();
        } else if (open) {
            body.push_back(l);
        }
    }
    flush(true);
    return out;
}

std::tm parse_now(const std::string& iso) {
    std::tm t{};
    if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min, &t.tm_sec) != 6)
        throw std::runtime_error("bad time in the cases file: " + iso);
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    return t;
}

TEST(ChatTemplatePeer, EveryLlamaCppTemplateRendersAsTransformers) {
    const std::string python = test::peers_python();
    const std::filesystem::path templates = std::filesystem::path(test::llama_cpp_dir()) / "models" / "templates";
    ASSERT_TRUE(std::filesystem::is_directory(templates)) << templates << " is missing (scripts/setup-peers unpacks it)";
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(templates))
        if (e.path().extension() == ".jinja") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 50u) << "too few chat templates in " << templates;

    char tmpl[] = "/tmp/quantlab-chat-template-peer-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string random_path = dir + "/random.txt";
    const test::PeerOutput generated = test::run_peer_script(python, "chat_template_random.py",
                                                             "--out '" + random_path + "' --count 100 --seed 39", dir);
    ASSERT_EQ(generated.status, 0) << generated.output;

    const std::string data = QUANTLAB_TEST_DATA_DIR;
    const json doc = json::parse(read_all(data + "/chat_template_cases.json"));
    std::vector<std::pair<std::string, std::string>> sources;
    for (const auto& f : files) sources.emplace_back(f.filename().string(), read_all(f));
    for (auto& s : read_snippets(read_all(data + "/chat_template_snippets.txt"))) sources.emplace_back("snippet:" + s.first, s.second);
    for (auto& s : read_snippets(read_all(random_path))) sources.emplace_back("random:" + s.first, s.second);
    ASSERT_EQ(sources.size(), files.size() + 300 + read_snippets(read_all(data + "/chat_template_snippets.txt")).size());
    auto names = [&](const char* key) {
        std::vector<std::string> v;
        for (const auto& c : doc[key]) v.push_back(c.get<std::string>());
        return v;
    };
    const std::vector<std::string> snippet_cases = names("snippet_cases"), random_cases = names("random_cases");

    json results = json::object();
    size_t rendered = 0;
    for (const auto& [name, source] : sources) {
        const std::vector<std::string>* only = name.rfind("snippet:", 0) == 0  ? &snippet_cases
                                                : name.rfind("random:", 0) == 0 ? &random_cases
                                                                                : nullptr;
        json& r = results[name] = json::object();
        std::optional<ChatTemplate> t;
        std::string parse_error;
        try {
            t = ChatTemplate::parse(source, name);
        } catch (const UserError& e) {
            parse_error = e.what();
        }
        for (const auto& c : doc["cases"]) {
            const std::string case_name = c["name"].get<std::string>();
            if (only && std::find(only->begin(), only->end(), case_name) == only->end()) continue;
            if (!t) {
                r[case_name] = {{"ok", false}, {"error", parse_error}};
                continue;
            }
            ChatTemplateInput in;
            in.messages = c["messages"];
            if (c.contains("tools")) in.tools = c["tools"];
            in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
            in.bos_token = doc["bos_token"].get<std::string>();
            in.eos_token = doc["eos_token"].get<std::string>();
            if (c.contains("extra")) in.extra = c["extra"];
            in.now = parse_now(doc["now"].get<std::string>());
            try {
                r[case_name] = {{"ok", true}, {"text", t->render(in)}};
                ++rendered;
            } catch (const UserError& e) {
                r[case_name] = {{"ok", false}, {"error", e.what()}};
            }
        }
    }
    // The real templates render most cases (a template that raises on every case would compare
    // nothing of its text).
    EXPECT_GT(rendered, files.size() * doc["cases"].size() * 3 / 4);

    const std::string results_path = dir + "/quantlab.json";
    std::ofstream(results_path, std::ios::binary) << results.dump();
    test::expect_peer_passes(python, "chat_template_peer.py",
                             "--cases '" + data + "/chat_template_cases.json' --templates '" + templates.string() +
                                 "' --results '" + results_path + "' --snippets '" + data + "/chat_template_snippets.txt' --random '" +
                                 random_path + "'",
                             dir);
}

}  // namespace
}  // namespace ql
