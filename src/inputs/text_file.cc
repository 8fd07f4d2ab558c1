#include "mcuprof/inputs/text_file.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcuprof/inputs/error.h"

namespace mcuprof::sources {

MappedFile::MappedFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error(path, "", std::string("cannot open: ") + std::strerror(errno));
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
        ::close(fd);
        throw Error(path, "", "cannot read: not a regular file");
    }
    size_ = static_cast<size_t>(status.st_size);
    if (size_ > 0) {
        data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data_ == MAP_FAILED) {
            const int error = errno;
            ::close(fd);
            data_ = nullptr;
            throw Error(path, "", std::string("cannot map: ") + std::strerror(error));
        }
        ::madvise(data_, size_, MADV_SEQUENTIAL);
    }
    ::close(fd);
}

MappedFile::~MappedFile()
{
    if (data_ != nullptr)
        ::munmap(data_, size_);
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
    if (progress_ != nullptr && offset_ >= next_report_) {
        (*progress_)(std::min(offset_, text_.size()), text_.size());
        next_report_ = offset_ + read_progress_step;
    }
    return true;
}

bool parse_hex32(std::string_view text, uint32_t& value)
{
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        text.remove_prefix(2);
    if (text.empty() || text.size() > 8)
        return false;
    uint32_t v = 0;
    uint8_t bad = 0;
    for (char c : text) {
        const uint8_t digit = hex_digit(c);
        bad |= digit & 0xF0;
        v = (v << 4) | (digit & 0x0F);
    }
    if (bad != 0)
        return false;
    value = v;
    return true;
}

std::optional<uint64_t> decimal_after(std::string_view text, std::string_view marker)
{
    const size_t at = text.find(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    const std::string_view rest = text.substr(at + marker.size());
    uint64_t value = 0;
    if (!parse_decimal(rest.substr(0, rest.find_first_not_of("0123456789")), value))
        return std::nullopt;
    return value;
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
