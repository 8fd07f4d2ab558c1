#pragma once
// Whole-file reading and line splitting shared by the text readers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcuprof::sources {

// The file's bytes; throws sources::Error naming the file when it cannot be read.
std::string read_file(const std::string& path);

// Walks the lines of a text (without their "\n" or "\r\n"), counting from 1.
class LineCursor {
public:
    explicit LineCursor(std::string_view text) : text_(text) {}
    bool next(std::string_view& line);
    size_t number() const { return number_; }

private:
    std::string_view text_;
    size_t offset_ = 0;
    size_t number_ = 0;
};

// Parses 1 to 8 hex digits, with or without "0x"; false on anything else.
bool parse_hex32(std::string_view text, uint32_t& value);
// Parses a decimal number that fits 64 bits; false on anything else.
bool parse_decimal(std::string_view text, uint64_t& value);

} // namespace mcuprof::sources
