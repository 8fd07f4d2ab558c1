#pragma once
// One firmware image (core::Image): the ELF file mapped once and checked once (ELF32,
// little-endian, EM_ARM), and everything the commands read from it, each part built the first
// time it is asked for: the sections, the symbols, the source locator (DWARF lines and inline
// chains), the call-frame tables (read by the Unwinder), the data layout (DWARF types), the
// image's identity and its ARM build attributes. The three DWARF readers share one
// DWARFContext, the image's, as LLVM's symbolizer gives each object file one DIContext
// (SymbolizableObjectFile). LLVM's types stay behind the pimpl.
//
// The debugging entries (.debug_info, .debug_types, .debug_abbrev) are checked before LLVM reads
// them (dwarf_check.h), a unit at a time: a lookup checks the units it reads, not the whole file.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::core {

class SymbolTable;
class SourceLocator;
class DataLayout;

// One section header with its bytes in the mapped file.
struct Section {
    std::string name;             // "?" when the string table does not name it
    uint32_t type = 0;            // SHT_*
    uint64_t flags = 0;           // SHF_*
    uint32_t address = 0;         // where the code runs or the data lives (VMA)
    uint32_t load_address = 0;    // where the image holds its bytes (LMA: the program header's
                                  // physical address); differs for code or data the start-up
                                  // copies to RAM (.data, .ramfunc, ITCM code)
    uint32_t size = 0;
    std::string_view bytes;       // the contents; empty for SHT_NOBITS or a section the file cannot hold
    bool readable = false;        // the contents lie inside the file (SHT_NOBITS: false)

    bool allocated() const;       // SHF_ALLOC: part of the target's memory image
    bool executable() const;      // SHF_EXECINSTR
    bool loaded() const;          // allocated with bytes in the file (not .bss)
    bool compressed() const;      // SHF_COMPRESSED
    bool copied() const { return load_address != address; }   // moved by the start-up code
    bool runs_code() const;       // allocated, executable and not empty: instructions the core runs
    uint64_t end() const { return uint64_t(address) + size; }             // past its last byte, where it runs
    uint64_t load_end() const { return uint64_t(load_address) + size; }   // ... where the image holds it
};

// One LOAD program header: what QEMU and a probe write into the target (System V ABI,
// "Program Header"). They load segments, not sections: a segment may hold more than its
// sections, the ELF headers in front of the first one among them.
struct Segment {
    unsigned index = 0;            // its place among the program headers
    uint32_t offset = 0;           // p_offset: 0 when the segment holds the ELF header itself
    uint32_t address = 0;          // p_vaddr: where it runs
    uint32_t load_address = 0;     // p_paddr: where its file bytes are written
    uint32_t file_size = 0;        // p_filesz: the bytes written
    uint32_t memory_size = 0;      // p_memsz: with the zeroed rest (.bss)

    uint64_t load_end() const { return uint64_t(load_address) + file_size; }
};

// Which firmware image an ELF is, so that a recording can tell whether the ELF it is
// reported with is the one it sampled: the GNU build-id note where the linker wrote one
// (ld --build-id), else a SHA-256 of what is loaded into the target (the address, size and
// bytes of every SHF_ALLOC section with contents). Debug information and symbols take no
// part: an image rebuilt from the same sources, or stripped, is the same firmware.
struct FirmwareIdentity {
    std::string kind;    // "build-id" or "sha256" (of the loadable sections)
    std::string value;   // lower-case hex

    bool operator==(const FirmwareIdentity& other) const { return kind == other.kind && value == other.value; }
    std::string text() const { return kind + " " + value; }
};

// The processor the image was built for, from its .ARM.attributes (ARM IHI 0045, "Addenda to,
// and Errata in, the ABI for the Arm Architecture", section 3.3.5): Tag_CPU_arch (6),
// Tag_CPU_arch_profile (7), Tag_FP_arch (10), Tag_CPU_name (5).
struct ArmAttributes {
    std::optional<unsigned> cpu_arch;       // 11 ARMv6-M, 10 with profile 'M' ARMv7-M, 13 ARMv7E-M, 16/17 ARMv8-M ...
    std::optional<unsigned> profile;        // 'M' (0x4D) for a microcontroller
    std::optional<unsigned> fp_arch;        // 0 none; else the FP architecture
    std::string cpu_name;                   // "cortex-m4" ..., as the compiler wrote it; may be empty

    // "ARMv7E-M", "ARMv6-M"...; empty when the image states no architecture.
    std::string architecture() const;
};

class Image {
public:
    // Maps the file and checks its header. Throws core::Error naming the file: unreadable,
    // not ELF32 little-endian, not EM_ARM, damaged section headers.
    static Image open(const std::string& elf_path);
    // The same from an image in memory (copied); `name` stands for the file in errors.
    static Image parse(std::string_view image, const std::string& name);
    ~Image();
    Image(Image&&) noexcept;
    Image& operator=(Image&&) noexcept;

    const std::string& path() const;
    const std::vector<Section>& sections() const;
    // The LOAD program headers, in file order; empty for an ELF without program headers.
    const std::vector<Segment>& load_segments() const;
    // The first section of that name, or nullptr.
    const Section* section(std::string_view name) const;
    // The initialised memory image: the 32-bit little-endian word at `address` in a loaded
    // section, when one holds all four bytes.
    std::optional<uint32_t> word(uint32_t address) const;
    // The vector table: the loaded section at the lowest address (ARMv7-M ARM, B1.5.3) of
    // those that run where they are loaded (code copied to an ITCM at 0 is not the table), at
    // most `most_words` of its words; empty when the image loads nothing.
    std::vector<uint32_t> vector_table(size_t most_words = 512) const;
    // The ELF header's entry point (e_entry, Thumb bit cleared): the linker script's ENTRY,
    // the reset handler in firmware; nothing when it lies outside the code, or at the start of
    // the first code section, where GNU ld puts it when the script names no ENTRY.
    std::optional<uint32_t> entry_point() const;

    // Built the first time, then kept (the references stay valid as long as the image).
    // Throws core::Error for corrupt symbol tables or debugging entries. Each is of this
    // image alone; the images of a target together are an ImageSet (image_set.h). The source
    // locator, the data layout and the call frames read one DWARF context, the image's.
    const SymbolTable& symbols() const;
    SourceLocator& locator() const;                // a cache of lookups: not const in use
    const DataLayout& data_layout() const;         // throws core::Error when the image has no DWARF
    const FirmwareIdentity& identity() const;
    const ArmAttributes& attributes() const;

    // Whether the image has DWARF debugging entries, line tables, call-frame information
    // (.debug_frame or .ARM.exidx): what --by task, --by line and --stacks need.
    bool has_debug_info() const;
    bool has_line_tables() const;
    bool has_call_frames() const;

    // The debugging entries, checked as LLVM comes to read them (dwarf_check.h), each part
    // once; each throws core::Error at the first entry that does not fit (again on a later call).
    // Every unit's header and its own first entry: before LLVM looks for the unit of an address.
    void check_dwarf_units() const;
    // The entries of the unit at a .debug_info offset and of the units they refer to: before
    // LLVM reads that unit (the source locator, for the unit of each address it looks up).
    void check_dwarf_unit_at(uint64_t offset) const;
    // Every entry: before LLVM reads them all (the data layout).
    void check_dwarf() const;

    struct Impl;
    // For the core's readers (firmware_object.h): the LLVM object behind the image.
    const Impl& impl() const { return *impl_; }

private:
    explicit Image(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace mcuprof::core
