#pragma once
// The images one target runs: usually one, else a bootloader and the application linked after
// it, a SoftDevice beside its application. Every command reads its firmware as a set, even a
// set of one. What belongs to the images together is the set's: the symbols of all of them
// (a name two images share told apart by the image's file name, "main (boot.elf)"), the source
// locator that reads each address in its own image's DWARF, which image holds an address, and
// what the images leave in doubt together. What is of one image (its vector table, entry
// point, identity, data layout) is asked of that Image; main() is the first one given, the
// image whose vector table the target boots from.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mcuprof/image/firmware.h"

namespace mcuprof::core {

class SymbolTable;
class SourceLocator;

class ImageSet {
public:
    // Opens each ELF (Image::open), in order, the first the main image. Throws core::Error
    // naming the later file when two images load bytes at the same address: their sections
    // first, then their LOAD segments (what QEMU and a probe write). Code two images both run
    // from one place in RAM is the earlier image's, and notes() says so.
    static ImageSet open(const std::vector<std::string>& elf_paths);
    // A set of one.
    explicit ImageSet(Image image);
    // Images already open (at least one), checked as open() checks them.
    explicit ImageSet(std::vector<Image> images);
    ~ImageSet();
    ImageSet(ImageSet&&) noexcept;
    ImageSet& operator=(ImageSet&&) noexcept;

    const std::vector<Image>& images() const;
    const Image& main() const;
    // The image whose code (an executable section, where it runs) holds the address, the
    // earlier one where two do; nullptr where none does.
    const Image* image_at(uint32_t address) const;

    // Built the first time, then kept. Of a set of one, the image's own.
    const SymbolTable& symbols() const;
    // Each address looked up in image_at's DWARF (the main image's where no image holds it),
    // its outermost frame named from symbols().
    SourceLocator& locator() const;
    // What the images leave in doubt together, one line each, for the report.
    const std::vector<std::string>& notes() const;
    // "app.elf" or "boot.elf and app.elf": for messages.
    std::string describe() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcuprof::core
