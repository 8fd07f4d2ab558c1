#pragma once
// A check of an ELF's DWARF debugging entries (.debug_info, .debug_types and the abbreviations
// in .debug_abbrev) before LLVM's DWARF library reads them.
//
// LLVM 14 trusts the encoded sizes of the entries it reads: it skips an attribute's value by
// the length the value itself gives (a block's length, a fixed form's size) without checking
// that it stays inside the unit, and its LEB128 reads do not stop at the end of the section
// once an offset has passed it. Corrupt DWARF then makes it read beyond the file in memory.
// The check walks every unit and every entry as LLVM would (DWARF 5 sections 7.5.1 unit
// headers, 7.5.3 abbreviations, 7.5.6 forms) and stops at the first value that does not fit.
// Units and entries that pass cannot take LLVM past the end of their unit.
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::core {

class Firmware;

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

// Throws core::Error(elf_path, "SECTION at 0xOFFSET", problem) at the first unit header,
// abbreviation or attribute value that does not fit where it is.
void check_debug_entries(const DebugSections& sections, const std::string& elf_path);

// The same for a firmware image's sections, found by name as LLVM finds them; a compressed
// section (SHF_COMPRESSED) is decompressed first, after its stated size has been checked
// against what zlib can produce. Sections it cannot read are LLVM's to report. Called by
// Firmware::check_dwarf, once per image.
void check_debug_entries(const Firmware& firmware);

} // namespace mcuprof::core
