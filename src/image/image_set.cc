#include "mcuprof/image/image_set.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>

#include "mcuprof/image/error.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/hex.h"

namespace mcuprof::core {

namespace {

// Where an image's sections are: each loaded section at its load address (where flash holds
// its bytes), and code run from RAM where it runs.
struct Occupied {
    uint32_t start;
    uint64_t end;
    const Section* section;
};
std::vector<Occupied> loaded_by(const Image& image)
{
    std::vector<Occupied> ranges;
    for (const Section& section : image.sections())
        if (section.loaded() && section.size != 0)
            ranges.push_back({section.load_address, section.load_end(), &section});
    return ranges;
}
std::vector<Occupied> ram_code_of(const Image& image)
{
    std::vector<Occupied> ranges;
    for (const Section& section : image.sections())
        if (section.runs_code() && section.copied())
            ranges.push_back({section.address, section.end(), &section});
    return ranges;
}
const Occupied* overlap(const Occupied& a, const std::vector<Occupied>& others)
{
    for (const Occupied& b : others)
        if (a.start < b.end && b.start < a.end)
            return &b;
    return nullptr;
}

std::string segment_text(const Image& image, const Segment& segment)
{
    return image.path() + "'s LOAD segment " + std::to_string(segment.index) + " (" + hex32(segment.load_address) +
           "-" + hex32(uint32_t(segment.load_end() - 1)) + ")";
}

// The lowest load address of a section the segment holds: past the start of the segment when
// the segment carries something before its first section (the ELF headers, page padding).
std::optional<uint32_t> first_section_in(const Image& image, const Segment& segment)
{
    std::optional<uint32_t> first;
    for (const Section& section : image.sections())
        if (section.loaded() && section.size != 0 && section.load_address >= segment.load_address &&
            section.load_end() <= segment.load_end() && (!first || section.load_address < *first))
            first = section.load_address;
    return first;
}

// Two images cannot write different bytes to one place of flash. Their sections first, which
// name the code that collides; then what QEMU (-kernel and -device loader) and a probe really
// write, the LOAD segments' file bytes, which may reach beyond the sections.
void check_loads_apart(const Image& image, const Image& other)
{
    const std::vector<Occupied> their_loads = loaded_by(other);
    for (const Occupied& mine : loaded_by(image))
        if (const Occupied* theirs = overlap(mine, their_loads))
            throw Error(image.path(), mine.section->name,
                        "loaded at " + hex32(std::max(mine.start, theirs->start)) + ", where " + other.path() +
                            "'s section " + theirs->section->name +
                            " is loaded too: two images of one target cannot share flash");
    for (const Segment& mine : image.load_segments())
        for (const Segment& theirs : other.load_segments()) {
            if (mine.file_size == 0 || theirs.file_size == 0 || mine.load_address >= theirs.load_end() ||
                theirs.load_address >= mine.load_end())
                continue;
            std::string why = "two images of one target cannot share flash";   // padding of their own
            // The usual cause when each image's sections keep apart: a linker with a large page
            // size (GNU ld 2.44 on ARM: 64 KiB) puts the ELF and program headers in front of the
            // first section, and the segment starts at the page's base, below the image.
            for (const auto& [segment, of] : {std::pair{&mine, &image}, std::pair{&theirs, &other}}) {
                const std::optional<uint32_t> first = first_section_in(*of, *segment);
                if (segment->offset == 0 && first && *first > segment->load_address)
                    why = of->path() + "'s segment holds its ELF headers, from " + hex32(segment->load_address) +
                          ", below its first section at " + hex32(*first) +
                          ": link it with -Wl,-n (no page alignment), a PHDRS command without FILEHDR and "
                          "PHDRS, or -Wl,-z,max-page-size=4096";
            }
            throw Error(image.path(), "LOAD segment " + std::to_string(mine.index),
                        "loads " + hex32(std::max(mine.load_address, theirs.load_address)) + " over " +
                            segment_text(other, theirs) + ": " + why);
        }
}

} // namespace

struct ImageSet::Impl {
    std::vector<Image> images;
    std::vector<std::string> notes;   // what the images leave in doubt together
    std::once_flag symbols_once, locator_once;
    std::unique_ptr<SymbolTable> symbols;   // merged; only for several images
    std::unique_ptr<SourceLocator> locator;

    // Checks `image` against the images before it, then takes it.
    void add(Image image);
};

void ImageSet::Impl::add(Image image)
{
    for (const Image& other : images) {
        check_loads_apart(image, other);
        // Both may copy code to the same RAM (a bootloader's RAM functions are the
        // application's RAM once it runs): the samples there are the earlier image's.
        const std::vector<Occupied> their_ram_code = ram_code_of(other);
        for (const Occupied& mine : ram_code_of(image))
            if (const Occupied* theirs = overlap(mine, their_ram_code))
                notes.push_back(image.path() + "'s code run from RAM (" + mine.section->name + ") runs where " +
                                other.path() + "'s " + theirs->section->name + " does, from " +
                                hex32(std::max(mine.start, theirs->start)) + ": samples there are named after " +
                                other.path() + "'s functions");
    }
    images.push_back(std::move(image));
}

ImageSet ImageSet::open(const std::vector<std::string>& elf_paths)
{
    if (elf_paths.empty())
        throw Error("", "", "no ELF to open");
    ImageSet set(Image::open(elf_paths.front()));
    // Each image checked as it is opened: a collision is named before a later file is read.
    for (size_t i = 1; i < elf_paths.size(); ++i)
        set.impl_->add(Image::open(elf_paths[i]));
    return set;
}

ImageSet::ImageSet(Image image) : impl_(std::make_unique<Impl>())
{
    impl_->images.push_back(std::move(image));
}

ImageSet::ImageSet(std::vector<Image> images) : impl_(std::make_unique<Impl>())
{
    if (images.empty())
        throw Error("", "", "an image set needs an image");
    for (Image& image : images)
        impl_->add(std::move(image));
}

ImageSet::~ImageSet() = default;
ImageSet::ImageSet(ImageSet&&) noexcept = default;
ImageSet& ImageSet::operator=(ImageSet&&) noexcept = default;

const std::vector<Image>& ImageSet::images() const { return impl_->images; }
const Image& ImageSet::main() const { return impl_->images.front(); }
const std::vector<std::string>& ImageSet::notes() const { return impl_->notes; }

const Image* ImageSet::image_at(uint32_t address) const
{
    for (const Image& image : impl_->images)
        if (image.symbols().in_code(address))
            return &image;
    return nullptr;
}

std::string ImageSet::describe() const
{
    const std::vector<Image>& images = impl_->images;
    std::string text = images.front().path();
    for (size_t i = 1; i < images.size(); ++i)
        text += (i + 1 == images.size() ? " and " : ", ") + images[i].path();
    return text;
}

const SymbolTable& ImageSet::symbols() const
{
    if (impl_->images.size() == 1)
        return main().symbols();
    std::call_once(impl_->symbols_once, [this] {
        std::vector<std::pair<std::string, const SymbolTable*>> tables;
        for (const Image& image : impl_->images)
            tables.emplace_back(image.path(), &image.symbols());
        impl_->symbols = std::make_unique<SymbolTable>(SymbolTable::merge(tables, describe()));
    });
    return *impl_->symbols;
}

SourceLocator& ImageSet::locator() const
{
    if (impl_->images.size() == 1)
        return main().locator();
    std::call_once(impl_->locator_once, [this] { impl_->locator = std::make_unique<SourceLocator>(*this); });
    return *impl_->locator;
}

} // namespace mcuprof::core
