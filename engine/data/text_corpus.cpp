// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace fs = std::filesystem;

std::vector<TextDocument> read_text_documents(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw UserError(path + ": no such file or folder");
    if (!fs::is_directory(path, ec)) return {TextDocument{path, read_whole_file(path, "text file")}};
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file() && it->path().extension() == ".txt") files.push_back(it->path().string());
    }
    if (ec) throw UserError(path + ": cannot list the folder: " + ec.message());
    if (files.empty()) throw UserError(path + ": the folder holds no .txt files");
    std::sort(files.begin(), files.end());
    std::vector<TextDocument> docs;
    for (const auto& f : files) docs.push_back({f, read_whole_file(f, "text file")});
    return docs;
}

TextDocument read_text_lines(const std::string& path, int64_t first, int64_t last, const std::string& spec) {
    const std::string text = read_whole_file(path, "text file");
    std::string kept;
    int64_t line = 0;
    size_t begin = 0;
    while (begin < text.size() && line < last) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        ++line;
        if (line >= first) {
            if (line > first) kept += '\n';
            kept.append(text, begin, end - begin);
        }
        begin = end + 1;
    }
    if (line < last)
        throw UserError("data '" + spec + "': line " + std::to_string(last) + " is past the end of " + path + " (" +
                        std::to_string(line) + " lines)");
    return TextDocument{path, kept};
}

std::vector<int64_t> tokenize_documents(
    const std::vector<TextDocument>& documents,
    const std::function<std::vector<int64_t>(const std::string&, const std::string&)>& encode, int64_t eos_id) {
    std::vector<int64_t> tokens;
    for (const auto& d : documents) {
        const std::vector<int64_t> t = encode(d.text, d.path);
        tokens.insert(tokens.end(), t.begin(), t.end());
        if (eos_id >= 0) tokens.push_back(eos_id);
    }
    return tokens;
}

}  // namespace ql
