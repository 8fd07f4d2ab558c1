#pragma once
// What the text tables share (profile, diff, call graph; docs/formats.md, "Long names"):
// printf-style cells of any length, and names folded onto lines of a bounded width.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "mcuprof/printf_string.h"

namespace mcuprof::core::text_table {

// Text tables fold a long name onto lines of at most this many characters.
inline constexpr size_t name_width = 100;

// The pieces of a name as the tables fold it: each at most `width` characters, broken after
// the last ", ", ";" or "::" that fits (a template's arguments, a stack's frames, a scope),
// else at the width; nothing is dropped.
inline std::vector<std::string> fold(const std::string& text, size_t width = name_width)
{
    std::vector<std::string> pieces;
    size_t at = 0;
    while (text.size() - at > width) {
        size_t cut = 0;
        for (const char* mark : {", ", ";", "::"}) {
            const size_t found = text.rfind(mark, at + width - std::strlen(mark));
            if (found != std::string::npos && found > at)
                cut = std::max(cut, found + std::strlen(mark));
        }
        if (cut == 0)
            cut = at + width;
        pieces.push_back(text.substr(at, cut - at));
        at = cut;
    }
    pieces.push_back(text.substr(at));
    return pieces;
}

// One row: its numbers, then the name folded, the continuation lines under the name and
// indented by four.
inline void write_row(std::ostream& out, const std::string& numbers, const std::string& name)
{
    const std::vector<std::string> pieces = fold(name);
    out << numbers << pieces.front() << '\n';
    for (size_t i = 1; i < pieces.size(); ++i)
        out << std::string(numbers.size() + 4, ' ') << pieces[i] << '\n';
}

} // namespace mcuprof::core::text_table
