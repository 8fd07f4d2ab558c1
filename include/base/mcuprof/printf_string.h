#pragma once
// printf-style text as a std::string, as long as the text needs: a name of any length (a C++
// template's, a stack's) is never cut. One helper for every layer's messages and reports.
#include <cstdio>
#include <string>

namespace mcuprof {

template <typename... Values> std::string printf_string(const char* pattern, Values... values)
{
    const int size = std::snprintf(nullptr, 0, pattern, values...);
    if (size <= 0)
        return {};
    std::string text(size_t(size) + 1, '\0');
    std::snprintf(text.data(), text.size(), pattern, values...);
    text.resize(size_t(size));
    return text;
}

} // namespace mcuprof
