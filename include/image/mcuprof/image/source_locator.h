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

class Image;
class ImageSet;
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
    // One image's lines and inline chains, read through its DWARF context; the outermost
    // frame is named from `names` (the image's own symbols, or a set's). Checks the image's
    // DWARF unit headers (Image::check_dwarf_units), and before each lookup the entries of
    // the unit it reads (check_dwarf_unit_at): corrupt ones throw core::Error, here or from
    // frames(). The image and the names must outlive the locator; Image::locator() keeps the
    // one of the image's own symbols.
    explicit SourceLocator(const Image& image);
    SourceLocator(const Image& image, const SymbolTable& names);
    // Several images' (ImageSet::locator() keeps the one a command uses): each address looked
    // up in the DWARF of the image that holds it (ImageSet::image_at; the main image's where
    // none does), named from the set's symbols.
    explicit SourceLocator(const ImageSet& images);
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
    // Of a set: the locator of the image that holds `address`; of one image: nullptr.
    SourceLocator* image_locator(uint32_t address) const;

    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::unordered_map<uint32_t, std::vector<SourceFrame>> cache_;
};

} // namespace mcuprof::core
