#include "mcuprof/vprobe/pc_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

namespace mcuprof::vprobe {

namespace {

// The layout truth.c writes: the magic, the vCPU count, then a slot per vCPU, each a 32-bit
// word stored atomically by its vCPU's thread.
constexpr uint32_t magic = 0x31464350;   // "PCF1"
constexpr size_t header_words = 2;
constexpr unsigned most_cores = 64;      // a sanity bound on the count read from the file
constexpr uint32_t no_instruction_yet = 0xFFFFFFFFu;

} // namespace

PcFile::PcFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error("--pc-file " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || size_t(st.st_size) < header_words * 4) {
        ::close(fd);
        throw std::runtime_error("--pc-file " + path + ": not a PC file of the truth plugin (too short)");
    }
    bytes_ = size_t(st.st_size);
    void* map = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);   // the mapping stays
    if (map == MAP_FAILED)
        throw std::runtime_error("--pc-file " + path + ": " + std::strerror(errno));
    words_ = static_cast<const uint32_t*>(map);
    const uint32_t count = __atomic_load_n(&words_[1], __ATOMIC_RELAXED);
    if (__atomic_load_n(&words_[0], __ATOMIC_ACQUIRE) != magic || count == 0 || count > most_cores ||
        bytes_ < (header_words + count) * 4) {
        ::munmap(const_cast<uint32_t*>(words_), bytes_);
        throw std::runtime_error("--pc-file " + path + ": not a PC file of the truth plugin (pcfile=PATH)");
    }
    cores_ = count;
}

PcFile::~PcFile()
{
    if (words_)
        ::munmap(const_cast<uint32_t*>(words_), bytes_);
}

std::optional<uint32_t> PcFile::pc(unsigned core) const
{
    if (core >= cores_)
        return std::nullopt;
    // The plugin's store is one aligned word: a load sees one whole address.
    const uint32_t value = __atomic_load_n(&words_[header_words + core], __ATOMIC_RELAXED);
    if (value == no_instruction_yet)
        return std::nullopt;
    return value;
}

} // namespace mcuprof::vprobe
