#pragma once
// A check of an ELF's DWARF debugging entries (.debug_info, .debug_types and the abbreviations
// in .debug_abbrev) before LLVM's DWARF library reads them.
//
// LLVM 14 trusts the encoded sizes of the entries it reads: it skips an attribute's value by
// the length the value itself gives (a block's length, a fixed form's size) without checking
// that it stays inside the unit, and its LEB128 reads do not stop at the end of the section
// once an offset has passed it. Corrupt DWARF then makes it read beyond the file in memory.
// The check walks the units and entries LLVM reads, as LLVM would (DWARF 5 sections 7.5.1 unit
// headers, 7.5.3 abbreviations, 7.5.6 forms) and stops at the first value that does not fit.
// Units and entries that pass cannot take LLVM past the end of their unit; LLVM reads no
// entry of a unit before the check of that unit has passed (Image's parts see to it).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::core {

class Image;

// One section of debugging entries: its name as the file spells it, and its bytes.
struct DebugInfoSection {
    std::string name;        // ".debug_info" or ".debug_types"
    std::string_view bytes;
    bool type_units = false; // .debug_types (DWARF 4): every unit has a type signature
};

struct DebugSections {
    std::vector<DebugInfoSection> units;
    std::string_view abbreviations;   // .debug_abbrev
    bool little_endian = true;
};

// The check of one image's debugging entries, a part at a time, as LLVM comes to read them.
// LLVM reads every unit's header and its first entry (the unit's own, DW_TAG_compile_unit or
// DW_TAG_type_unit) to find the unit that holds an address, and the rest of a unit's entries
// only when it looks up an address in that unit, or follows a reference into it; so the check
// does the same, and a lookup costs the check of the units it reads, not of the whole file.
class DebugEntryCheck {
public:
    // Checks every unit header, the abbreviation table each unit names, and each unit's first
    // entry. Throws core::Error(elf_path, "SECTION at 0xOFFSET", problem) at the first that
    // does not fit. The bytes must outlive the check.
    DebugEntryCheck(const DebugSections& sections, const std::string& elf_path);
    // The same for a firmware image's sections, found by name as LLVM finds them; a compressed
    // section (SHF_COMPRESSED) is decompressed first (and kept by the check), after its stated
    // size has been checked against what zlib can produce. Sections it cannot read are LLVM's
    // to report.
    static std::unique_ptr<DebugEntryCheck> of(const Image& image);
    ~DebugEntryCheck();
    DebugEntryCheck(const DebugEntryCheck&) = delete;
    DebugEntryCheck& operator=(const DebugEntryCheck&) = delete;

    // Every entry of the .debug_info unit that holds `offset`, and of every unit its entries
    // refer to (DW_FORM_ref_addr into another unit; DW_FORM_ref_sig8: every type unit), as
    // LLVM reads them when it follows those references; each unit once. An offset in no unit
    // checks nothing (LLVM finds no unit there either).
    void check_unit_at(uint64_t offset);
    // Every entry of every unit.
    void check_all();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The whole check at once (DebugEntryCheck's header pass, then check_all).
void check_debug_entries(const DebugSections& sections, const std::string& elf_path);

} // namespace mcuprof::core
