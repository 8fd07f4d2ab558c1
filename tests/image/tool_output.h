#pragma once
// The standard output of a peer tool (readelf, objdump, nm, ...), for tests that compare
// with it; the test fails when the command does.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

inline std::string tool_output(const std::string& command)
{
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
        out.append(buffer, n);
    REQUIRE(pclose(pipe) == 0);
    return out;
}
