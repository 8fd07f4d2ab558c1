#pragma once
// Whole-file reading and line splitting shared by the text readers.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
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

// How far a reader is through its input: bytes done of the total. Called every few MiB,
// so that a command can show progress on long reads; may be empty.
using ReadProgress = std::function<void(size_t done, size_t total)>;
inline constexpr size_t read_progress_step = size_t(4) << 20;

// Walks the lines of a text (without their "\n" or "\r\n"), counting from 1, telling
// `progress` (when given) as it goes.
class LineCursor {
public:
    explicit LineCursor(std::string_view text, const ReadProgress* progress = nullptr)
        : text_(text), progress_(progress != nullptr && *progress ? progress : nullptr)
    {
    }
    bool next(std::string_view& line);
    size_t number() const { return number_; }

private:
    std::string_view text_;
    const ReadProgress* progress_;
    size_t offset_ = 0;
    size_t number_ = 0;
    size_t next_report_ = read_progress_step;
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
// Exactly 8 hex digits at p (upper or lower case) as a number, eight characters at once
// in one 64-bit word; false when any is not a hex digit. The inner loop of dump reading.
inline bool parse_hex8(const char* p, uint32_t& out)
{
    constexpr uint64_t ones = 0x0101010101010101ull;
    constexpr uint64_t high = 0x8080808080808080ull;
    uint64_t x;
    std::memcpy(&x, p, 8);   // little-endian: the first character in the low byte
    // Per byte b < 0x80: b >= lo  <=>  bit 7 of b + (0x80 - lo); no carry crosses bytes.
    auto at_least = [&](uint64_t v, unsigned lo) { return (v + ones * (0x80 - lo)) & high; };
    const uint64_t lower = x | ones * 0x20;
    const uint64_t digit = at_least(x, '0') & ~at_least(x, '9' + 1);
    const uint64_t letter = at_least(lower, 'a') & ~at_least(lower, 'f' + 1);
    if ((x & high) != 0 || (digit | letter) != high)
        return false;
    // '0'-'9' -> low nibble; 'a'-'f' and 'A'-'F' -> low nibble + 9 (bit 6 marks letters).
    uint64_t v = (x & ones * 0x0F) + 9 * ((x >> 6) & ones);
    v = ((v << 4) | (v >> 8)) & 0x00FF00FF00FF00FFull;   // digit pairs into bytes
    out = uint32_t((v & 0xFF) << 24 | ((v >> 16) & 0xFF) << 16 | ((v >> 32) & 0xFF) << 8 | ((v >> 48) & 0xFF));
    return true;
}

// Parses 1 to 8 hex digits, with or without "0x"; false on anything else.
bool parse_hex32(std::string_view text, uint32_t& value);
// Parses a decimal number that fits 64 bits; false on anything else.
bool parse_decimal(std::string_view text, uint64_t& value);
// The decimal number right after the first `marker` in `text` ("instruction count = 42"),
// or nothing when the marker or the digits are missing or do not fit 64 bits.
std::optional<uint64_t> decimal_after(std::string_view text, std::string_view marker);

} // namespace mcuprof::sources
