#include "mcuprof/sources/text_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "mcuprof/sources/error.h"

namespace mcuprof::sources {

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(path, "", std::string("cannot open: ") + std::strerror(errno));
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0)
        throw Error(path, "", "cannot read: not a regular file");
    std::string bytes(static_cast<size_t>(size), '\0');
    in.seekg(0);
    in.read(bytes.data(), size);
    if (!in)
        throw Error(path, "", "cannot read the whole file");
    return bytes;
}

bool LineCursor::next(std::string_view& line)
{
    if (offset_ >= text_.size())
        return false;
    size_t end = text_.find('\n', offset_);
    if (end == std::string_view::npos)
        end = text_.size();
    line = text_.substr(offset_, end - offset_);
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    offset_ = end + 1;
    ++number_;
    return true;
}

bool parse_hex32(std::string_view text, uint32_t& value)
{
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        text.remove_prefix(2);
    if (text.empty() || text.size() > 8)
        return false;
    uint32_t v = 0;
    for (char c : text) {
        uint32_t digit;
        if (c >= '0' && c <= '9')
            digit = uint32_t(c - '0');
        else if (c >= 'a' && c <= 'f')
            digit = uint32_t(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            digit = uint32_t(c - 'A' + 10);
        else
            return false;
        v = (v << 4) | digit;
    }
    value = v;
    return true;
}

bool parse_decimal(std::string_view text, uint64_t& value)
{
    if (text.empty() || text.size() > 20)
        return false;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        const uint64_t digit = uint64_t(c - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;   // does not fit 64 bits
        v = v * 10 + digit;
    }
    value = v;
    return true;
}

} // namespace mcuprof::sources
