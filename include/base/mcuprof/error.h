#pragma once
// The error every layer reports with: one line that names the file (or connection),
// the place in it and the problem. Each layer derives its own type from it, and the
// CLI catches the base once, prints what() and exits with code 2.
#include <stdexcept>
#include <string>

namespace mcuprof {

class Error : public std::runtime_error {
public:
    // file: a path, or a description such as "gdb localhost:1234"; place: "line 12",
    // "offset 0x40", "symbol table", or empty when the whole file is meant.
    Error(std::string file, std::string place, const std::string& problem);

    const std::string& file() const { return file_; }
    const std::string& place() const { return place_; }
    // The problem alone, for a layer that rethrows it with a better file and place.
    const std::string& problem() const { return problem_; }

private:
    std::string file_;
    std::string place_;
    std::string problem_;
};

} // namespace mcuprof
