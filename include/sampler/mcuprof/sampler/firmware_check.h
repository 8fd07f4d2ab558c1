#pragma once
// Is the firmware on the target the ELF the samples will be attributed with? Checked once,
// before the first sample, on every live link: a few words of the image read back from
// target memory (the vector table, and a spread of the read-only code) and the core's CPUID
// (0xE000ED00, ARMv7-M ARM B4.1.2) against the ELF's ARM build attributes. A mismatch is an
// error naming what differs, or with --no-verify a warning the recording keeps.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mcuprof::core {
class ImageSet;
}

namespace mcuprof::sources {

class HaltingTarget;

// What the target must hold, taken from the image before the link is touched.
struct FirmwareCheck {
    enum class Kind {
        vector_table,   // at its load address
        code,           // at its load address: in flash for code the start-up copies to RAM
        ram_code,       // where code copied to RAM runs: compared for the message, never refused
    };
    struct Region {
        uint32_t address;
        std::string bytes;   // the ELF's
        Kind kind;
        std::string of;      // " of boot.elf" when the target runs several images; else empty
    };
    std::string elf;                                          // the ELF's path (or paths), for messages
    std::vector<Region> regions;
    std::optional<unsigned> cpu_arch;                         // Tag_CPU_arch, when the ELF states one
    std::string architecture;                                 // "ARMv7E-M": the ELF's, for messages
    bool warn_only = false;                                   // --no-verify
};

// The vector table (its first 16 words: the stack pointer and the system exceptions) and
// four 16-byte windows spread over the executable sections, each read where the image loads it
// (its LMA: code run from RAM is checked in flash, where it stays); the first 16 bytes of each
// section of code run from RAM where it runs, which only the message reports (at reset the
// start-up has not copied it yet): six or more reads, and CPUID one more. Of every image of
// the set, each at its own addresses; the build attributes are the main image's.
FirmwareCheck firmware_check(const core::ImageSet& images, bool warn_only);

struct FirmwareCheckResult {
    bool matches = true;
    std::string message;   // one line: what was compared, or what differs
};

// Reads the regions and CPUID from the target (halted or not: the links read memory either
// way). Throws transport::Error when the link fails.
FirmwareCheckResult check_target(HaltingTarget& target, const FirmwareCheck& check);

// The architectures whose code a core of this CPUID part number runs as built for it
// (CPUID.PartNo, bits 15:4): empty for a part this table does not know.
std::string cortex_m_name(uint32_t cpuid);
bool architecture_fits(uint32_t cpuid, unsigned cpu_arch);

} // namespace mcuprof::sources
