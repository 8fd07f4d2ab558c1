#pragma once
// Source lines and inline chains of code addresses, from the ELF's DWARF through LLVM's
// DWARFContext. Every distinct address is looked up once and remembered.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mcuprof::core {

class Firmware;
class SymbolTable;

struct SourceFrame {
    // As DWARF names it, demangled (demangle.h); empty when unknown. An inlined frame is its
    // abstract origin's function: where two functions DWARF describes share a name, the name
    // says which, by the declaration's file, file:line or DIE (" (unit_a.cpp)", as symbols.h).
    std::string function;
    std::string file;       // empty when there is no line information
    uint32_t line = 0;
    uint32_t column = 0;
    std::string symbol;     // the name DWARF gives (the linkage name, mangled, where it has one)
};

class SourceLocator {
public:
    // Checks the image's DWARF unit headers (Firmware::check_dwarf_units), and before each
    // lookup the entries of the unit it reads (check_dwarf_unit_at): corrupt ones throw
    // core::Error, here or from frames(). The image must outlive the locator;
    // Firmware::locator() keeps the one a command uses. With more images (Firmware::open's
    // `more`), an address in another image's code is looked up in that image's DWARF.
    explicit SourceLocator(const Firmware& firmware);
    // The same from an image in memory (copied, and kept); `name` stands for the file in errors.
    static std::unique_ptr<SourceLocator> parse(std::string_view image, const std::string& name);
    ~SourceLocator();
    SourceLocator(const SourceLocator&) = delete;
    SourceLocator& operator=(const SourceLocator&) = delete;

    // The inline chain at an address: the innermost (inlined) function first, the
    // function the code physically belongs to last. Empty without debug information.
    // Throws core::Error when the unit that holds the address has corrupt entries.
    const std::vector<SourceFrame>& frames(uint32_t address);

    // "file:line" of the innermost frame, or empty.
    static std::string line_of(const std::vector<SourceFrame>& frames);
    // The same for an address, from the line table alone: no function is named, so the
    // DWARF of the image is not read whole for the labels of inlined functions (frames()).
    std::string line_at(uint32_t address);

private:
    // One image's DWARF, its outermost frames named from `names` (all images' symbols).
    SourceLocator(const Firmware& image, const SymbolTable& names);
    // The locator of the other image whose code holds `address`, or nullptr (this image's).
    SourceLocator* other_image_at(uint32_t address) const;

    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::unordered_map<uint32_t, std::vector<SourceFrame>> cache_;
};

} // namespace mcuprof::core
