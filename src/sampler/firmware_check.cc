#include "mcuprof/sampler/firmware_check.h"

#include <algorithm>
#include <cstdio>

#include "mcuprof/image/image_set.h"
#include "mcuprof/target/halting_target.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {
namespace {

constexpr uint32_t shf_write = 0x1;               // SHF_WRITE: data the firmware changes as it runs
constexpr size_t vector_words = 16;               // SP_main, Reset and the 14 system exception vectors
constexpr size_t code_windows = 4;
constexpr uint32_t window_bytes = 16;

uint32_t word_at(const std::string& bytes, size_t at)
{
    auto b = [&](size_t i) { return uint32_t(uint8_t(bytes[at + i])); };
    return b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24;
}

// Tag_CPU_arch values (ARM IHI 0045, 3.3.5.2) each Cortex-M part runs as its own.
struct Part {
    uint32_t number;   // CPUID.PartNo
    const char* name;
    std::vector<unsigned> architectures;
};
const std::vector<Part>& parts()
{
    static const std::vector<Part> table = {
        {0xC20, "Cortex-M0", {11, 12}},         {0xC60, "Cortex-M0+", {11, 12}},
        {0xC21, "Cortex-M1", {11, 12}},         {0xC23, "Cortex-M3", {10}},
        {0xC24, "Cortex-M4", {10, 13}},         {0xC27, "Cortex-M7", {10, 13}},
        {0xD20, "Cortex-M23", {16}},            {0xD21, "Cortex-M33", {16, 17}},
        {0xD31, "Cortex-M35P", {16, 17}},       {0xD22, "Cortex-M55", {16, 17, 21}},
        {0xD23, "Cortex-M85", {16, 17, 21}},
    };
    return table;
}

const Part* part_of(uint32_t cpuid)
{
    const uint32_t number = (cpuid >> 4) & 0xFFFu;
    for (const Part& part : parts())
        if (part.number == number)
            return &part;
    return nullptr;
}

} // namespace

std::string cortex_m_name(uint32_t cpuid)
{
    const Part* part = part_of(cpuid);
    return part != nullptr ? part->name : "";
}

bool architecture_fits(uint32_t cpuid, unsigned cpu_arch)
{
    const Part* part = part_of(cpuid);
    return part == nullptr ||
           std::find(part->architectures.begin(), part->architectures.end(), cpu_arch) != part->architectures.end();
}

namespace {

// The regions of one image; `of`: " of IMAGE" when the target runs several.
void add_regions(FirmwareCheck& check, const core::Image& image, const std::string& of)
{
    // What the target holds whatever the firmware has done since reset: every loaded section's
    // bytes at their load address (LMA). A section the start-up code copies (.data, code run from
    // RAM, ITCM code) keeps its image in flash there; one loaded where it runs holds its bytes
    // there only while the firmware does not write it (SHF_WRITE clear).
    struct Fixed {
        const core::Section* section;
        uint32_t at;   // where the target holds these bytes
    };
    std::vector<Fixed> fixed;
    for (const core::Section& section : image.sections())
        if (section.loaded() && section.bytes.size() >= 4 && (section.copied() || (section.flags & shf_write) == 0))
            fixed.push_back({&section, section.load_address});
    std::sort(fixed.begin(), fixed.end(), [](const Fixed& a, const Fixed& b) { return a.at < b.at; });
    if (const std::vector<uint32_t> vectors = image.vector_table(vector_words); !vectors.empty()) {
        std::string bytes;
        for (uint32_t word : vectors)
            for (int shift = 0; shift < 32; shift += 8)
                bytes.push_back(char(word >> shift));
        for (const Fixed& f : fixed)   // the table's address: its section's
            if (!f.section->copied() && f.section->bytes.substr(0, bytes.size()) == bytes) {
                check.regions.push_back({f.at, bytes, FirmwareCheck::Kind::vector_table, of});
                break;
            }
    }
    // Windows spread evenly over the executable bytes, in load-address order.
    uint64_t code_bytes = 0;
    for (const Fixed& f : fixed)
        if (f.section->executable())
            code_bytes += f.section->bytes.size();
    for (size_t i = 0; i < code_windows && code_bytes >= window_bytes; ++i) {
        uint64_t offset = code_bytes * (2 * i + 1) / (2 * code_windows);   // the middles of equal parts
        for (const Fixed& f : fixed) {
            const std::string_view bytes = f.section->bytes;
            if (!f.section->executable())
                continue;
            if (offset < bytes.size()) {
                const uint64_t at = std::min<uint64_t>(offset & ~uint64_t(3), bytes.size() - std::min<uint64_t>(window_bytes, bytes.size()));
                check.regions.push_back({f.at + uint32_t(at), std::string(bytes.substr(at, window_bytes)),
                                         FirmwareCheck::Kind::code, of});
                break;
            }
            offset -= bytes.size();
        }
    }
    // Code run from RAM, where it runs: it is there once the start-up has copied it, and
    // anything before (at reset, in a bootloader). Compared for the message, never refused.
    for (const core::Section& section : image.sections())
        if (section.loaded() && section.copied() && section.executable() && section.bytes.size() >= 4) {
            const size_t size = std::min<size_t>(window_bytes, section.bytes.size() & ~size_t(3));
            check.regions.push_back({section.address, std::string(section.bytes.substr(0, size)),
                                     FirmwareCheck::Kind::ram_code, of});
        }
}

} // namespace

FirmwareCheck firmware_check(const core::ImageSet& images, bool warn_only)
{
    FirmwareCheck check;
    check.elf = images.describe();
    check.warn_only = warn_only;
    const bool several = images.images().size() > 1;
    for (const core::Image& image : images.images())
        add_regions(check, image, several ? " of " + image.path() : "");
    const core::ArmAttributes& attributes = images.main().attributes();
    check.cpu_arch = attributes.cpu_arch;
    check.architecture = attributes.architecture();
    return check;
}

FirmwareCheckResult check_target(HaltingTarget& target, const FirmwareCheck& check)
{
    FirmwareCheckResult result;
    std::vector<std::string> differences, unread, not_in_ram, in_ram;
    size_t compared = 0, fixed_regions = 0;
    for (const FirmwareCheck::Region& region : check.regions) {
        using Kind = FirmwareCheck::Kind;
        const std::string found = target.read_memory(region.address, uint32_t(region.bytes.size()));
        const std::string what = (region.kind == Kind::vector_table ? "the vector table at "
                                  : region.kind == Kind::code       ? "the code at "
                                                                    : "the RAM code at ") +
                                 hex32(region.address) + region.of;
        fixed_regions += region.kind != Kind::ram_code;
        if (found.size() != region.bytes.size()) {
            unread.push_back(what);
            continue;
        }
        std::optional<std::string> difference;
        for (size_t at = 0; at + 4 <= region.bytes.size() && !difference; at += 4)
            if (found.compare(at, 4, region.bytes, at, 4) != 0)
                difference = what + " differs (" +
                             (region.kind == Kind::vector_table ? "word " + std::to_string(at / 4)
                                                                : "at " + hex32(region.address + uint32_t(at))) +
                             ": target " + hex32(word_at(found, at)) + ", ELF " + hex32(word_at(region.bytes, at)) + ")";
        if (region.kind == Kind::ram_code) {
            (difference ? not_in_ram : in_ram).push_back(hex32(region.address) + region.of);
            continue;
        }
        ++compared;
        if (difference)
            differences.push_back(*difference);
    }
    std::string core_text;
    const std::string cpuid_bytes = target.read_memory(cortex_m::cpuid, 4);
    if (cpuid_bytes.size() == 4) {
        const uint32_t cpuid = word_at(cpuid_bytes, 0);
        const std::string name = cortex_m_name(cpuid);
        core_text = "CPUID " + hex32(cpuid) + (name.empty() ? " (a part this check does not know)" : " (" + name + ")");
        if (check.cpu_arch && !architecture_fits(cpuid, *check.cpu_arch))
            differences.push_back("the target is a " + name + " (CPUID " + hex32(cpuid) + "), the ELF is built for " +
                                  check.architecture);
    } else {
        unread.push_back("CPUID");
    }
    result.matches = differences.empty();
    std::string text;
    auto join = [](const std::vector<std::string>& parts) {
        std::string joined;
        for (const std::string& part : parts)
            joined += (joined.empty() ? "" : "; ") + part;
        return joined;
    };
    if (!result.matches) {
        result.message = "the target does not run " + check.elf + ": " + join(differences);
        return result;
    }
    result.message = "the target runs " + check.elf + ": " + std::to_string(compared) + " of " +
                     std::to_string(fixed_regions) + " regions (vector table, code) equal the ELF's";
    if (!core_text.empty())
        result.message += ", " + core_text + (check.cpu_arch ? " fits " + check.architecture : "");
    if (!in_ram.empty())
        result.message += "; the code run from RAM is in place at " + join(in_ram);
    if (!not_in_ram.empty())
        result.message += "; the code run from RAM at " + join(not_in_ram) +
                          " is not there yet (the start-up copies it from its load address, which matches)";
    if (!unread.empty())
        result.message += "; not readable: " + join(unread);
    return result;
}

} // namespace mcuprof::sources
