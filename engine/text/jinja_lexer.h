// SPDX-License-Identifier: GPL-3.0-or-later
// Tokens of a Jinja template as Jinja2's lexer (jinja2/lexer.py, Lexer.tokeniter and wrap) makes
// them under transformers' settings: trim_blocks and lstrip_blocks on, default delimiters, no
// line statements, keep_trailing_newline off. Whitespace control ({%- -%} {{- -}} {#- -#} and the
// `+` forms) is applied here, so the parser sees data with the stripping already done.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ql::jinja {

// A template that does not lex or parse; line and column are 1-based in the source.
class SyntaxError : public std::runtime_error {
public:
    SyntaxError(int line, int column, const std::string& message)
        : std::runtime_error(message), line_(line), column_(column) {}
    int line() const { return line_; }
    int column() const { return column_; }

private:
    int line_;
    int column_;
};

enum class TokenType {
    Data,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Integer,
    Float,
    Operator,
    Eof
};

struct Token {
    TokenType type = TokenType::Eof;
    std::string value;  // Data text, Name, String (unescaped), Operator spelling
    int64_t int_value = 0;
    double float_value = 0;
    int line = 1;
    int column = 1;
};

// Throws SyntaxError. The source must be valid UTF-8.
std::vector<Token> tokenize(std::string_view source);

}  // namespace ql::jinja
