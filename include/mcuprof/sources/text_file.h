#pragma once
// Whole-file reading and line splitting shared by the text readers.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcuprof::sources {

// A file's bytes, mapped read-only into memory (no copy: dumps of millions of samples
// are read once, front to back). Throws sources::Error naming the file.
class MappedFile {
public:
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

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

// Value of each byte as a hex digit, 0xFF for anything else: one lookup per character
// keeps the parse of a ten-million-sample dump short.
inline constexpr std::array<uint8_t, 256> hex_digits = [] {
    std::array<uint8_t, 256> table{};
    table.fill(0xFF);
    for (int c = '0'; c <= '9'; ++c)
        table[c] = uint8_t(c - '0');
    for (int c = 'a'; c <= 'f'; ++c)
        table[c] = uint8_t(c - 'a' + 10);
    for (int c = 'A'; c <= 'F'; ++c)
        table[c] = uint8_t(c - 'A' + 10);
    return table;
}();

// The value of a hex digit character, or a value with bits 7:4 set for any other.
inline uint8_t hex_digit(char c)
{
    return hex_digits[static_cast<uint8_t>(c)];
}
// Parses 1 to 8 hex digits, with or without "0x"; false on anything else.
bool parse_hex32(std::string_view text, uint32_t& value);
// Parses a decimal number that fits 64 bits; false on anything else.
bool parse_decimal(std::string_view text, uint64_t& value);

} // namespace mcuprof::sources
