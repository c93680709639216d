// SPDX-License-Identifier: GPL-3.0-or-later
// Text corpora: one text file, or a folder whose .txt files (recursively, sorted by relative
// path, so the order and hence the split is the same on every machine) are read one document
// each. Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ql {

// The documents of a text source, in order: a file gives one, a folder one per .txt file.
// A folder without .txt files, or an unreadable file, is a UserError naming the path.
struct TextDocument {
    std::string path;
    std::string text;
};
std::vector<TextDocument> read_text_documents(const std::string& path);

// Lines first..last (1-based, inclusive, every line counted, blank ones too) of the text file
// `path`, joined by '\n', as one document (data `FILE#lines=A-B` for a language model). A range
// past the file's end is a UserError naming `spec` and the file's line count.
TextDocument read_text_lines(const std::string& path, int64_t first, int64_t last, const std::string& spec);

// Concatenates the documents' tokens, with eos_id after each document when eos_id >= 0.
std::vector<int64_t> tokenize_documents(
    const std::vector<TextDocument>& documents,
    const std::function<std::vector<int64_t>(const std::string&, const std::string&)>& encode, int64_t eos_id);

}  // namespace ql
