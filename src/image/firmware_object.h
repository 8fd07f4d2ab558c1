#pragma once
// Inside the core only: the LLVM object behind a core::Image, and its one DWARF context, for
// the readers that hand them to LLVM (symbols, source locator, data layout, call frames). Not
// a public header: no LLVM type leaves the core.
#include <string>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Object/ELFObjectFile.h>

#include "mcuprof/image/firmware.h"

namespace mcuprof::core {

const llvm::object::ELF32LEObjectFile& object_of(const Image& image);
// The image's DWARF context, made the first time (relocations processed, LLVM's own warnings
// kept from standard error). Not safe to share between threads: LLVM parses it lazily.
llvm::DWARFContext& dwarf_of(const Image& image);
// The first problem LLVM reported through it, or "".
const std::string& first_dwarf_problem(const Image& image);
// Image::check_dwarf_unit_at and check_dwarf once the unit headers have passed
// (Image::check_dwarf_units), by the image's parts: those stay where they are when the Image
// object moves, so a reader that keeps them (the source locator) may outlive the move.
void check_unit_entries(const Image::Impl& image, uint64_t offset);
void check_all_entries(const Image::Impl& image);
// Whether LLVM itself could read the entries of `unit` (this image's): the checks above read
// the sections as this core finds them, and where LLVM finds no entries at all (a compressed
// .debug_abbrev it cannot decompress, say) its address lookups would dereference the missing
// unit entry (DWARFUnit::getSubroutineForAddress, LLVM 19). Throws core::Error then.
void check_unit_read_by_llvm(const Image::Impl& image, llvm::DWARFUnit& unit);

} // namespace mcuprof::core
