#include "mcuprof/image/firmware.h"

#include <cstdio>
#include <mutex>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/ARMAttributeParser.h>
#include <llvm/Support/ARMBuildAttributes.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>

#include "firmware_object.h"
#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/dwarf_check.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/hex.h"

namespace mcuprof::core {

bool Section::allocated() const { return (flags & llvm::ELF::SHF_ALLOC) != 0; }
bool Section::executable() const { return (flags & llvm::ELF::SHF_EXECINSTR) != 0; }
bool Section::loaded() const { return allocated() && type != llvm::ELF::SHT_NOBITS && readable; }
bool Section::compressed() const { return (flags & llvm::ELF::SHF_COMPRESSED) != 0; }
bool Section::runs_code() const { return allocated() && executable() && size != 0; }

std::string ArmAttributes::architecture() const
{
    if (!cpu_arch)
        return {};
    namespace attrs = llvm::ARMBuildAttrs;
    switch (*cpu_arch) {
    case attrs::v6_M: return "ARMv6-M";
    case attrs::v6S_M: return "ARMv6S-M";
    case attrs::v7: return profile == unsigned(attrs::MicroControllerProfile) ? "ARMv7-M" : "ARMv7";
    case attrs::v7E_M: return "ARMv7E-M";
    case attrs::v8_M_Base: return "ARMv8-M baseline";
    case attrs::v8_M_Main: return "ARMv8-M mainline";
    case attrs::v8_1_M_Main: return "ARMv8.1-M mainline";
    default: return "Tag_CPU_arch " + std::to_string(*cpu_arch);
    }
}

namespace {

uint32_t word_at(const uint8_t* p)
{
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::string hex_bytes(const uint8_t* bytes, size_t size)
{
    std::string text;
    char digits[3];
    for (size_t i = 0; i < size; ++i) {
        std::snprintf(digits, sizeof digits, "%02x", bytes[i]);
        text += digits;
    }
    return text;
}

// The descriptor of the NT_GNU_BUILD_ID note (type 3, owner "GNU") in a SHT_NOTE section:
// notes are namesz, descsz, type, then the name and the descriptor, each padded to 4 bytes
// (System V ABI, "Note Section").
std::optional<std::string> build_id_in(std::string_view notes)
{
    constexpr uint32_t nt_gnu_build_id = 3;
    const auto* p = reinterpret_cast<const uint8_t*>(notes.data());
    auto padded = [](uint64_t n) { return (n + 3) & ~uint64_t(3); };
    for (size_t at = 0; at + 12 <= notes.size();) {
        const uint32_t name_size = word_at(p + at), desc_size = word_at(p + at + 4), type = word_at(p + at + 8);
        const uint64_t desc_at = at + 12 + padded(name_size), end = desc_at + padded(desc_size);
        if (end > notes.size())
            return std::nullopt;
        if (type == nt_gnu_build_id && name_size == 4 && notes.substr(at + 12, 3) == "GNU" && desc_size > 0)
            return hex_bytes(p + desc_at, desc_size);
        at = end;
    }
    return std::nullopt;
}

} // namespace

struct Image::Impl {
    std::string path;
    std::unique_ptr<llvm::MemoryBuffer> buffer;   // the file, mapped (or the copy parse made)
    std::unique_ptr<llvm::object::ObjectFile> object;
    const llvm::object::ELF32LEObjectFile* elf = nullptr;
    std::vector<Section> sections;
    std::vector<Segment> segments;   // the LOAD program headers

    // Each part once, the first time it is asked for. A part whose building throws is tried
    // again (and throws again) the next time: call_once leaves its flag unset then.
    std::once_flag dwarf_headers_once, symbols_once, locator_once, layout_once, identity_once, attributes_once;
    std::unique_ptr<DebugEntryCheck> dwarf_check;   // built by the header pass
    mutable std::mutex dwarf_mutex;                  // the check's record of the units it has checked
    // The one DWARF context of the image (dwarf_of): the source locator, the data layout and
    // the call frames read through it, each what it needs, LLVM parsing each part once.
    mutable std::once_flag dwarf_once;
    mutable std::unique_ptr<llvm::DWARFContext> dwarf;
    mutable std::string dwarf_problem;   // the first problem LLVM reported while reading it
    std::unique_ptr<SymbolTable> symbols;
    std::unique_ptr<SourceLocator> locator;
    std::unique_ptr<DataLayout> layout;
    FirmwareIdentity identity;
    ArmAttributes attributes;

    void read_sections();
    FirmwareIdentity find_identity() const;
    ArmAttributes read_attributes() const;
};

const llvm::object::ELF32LEObjectFile& object_of(const Image& image)
{
    return *image.impl().elf;
}

llvm::DWARFContext& dwarf_of(const Image& image)
{
    const Image::Impl& impl = image.impl();
    std::call_once(impl.dwarf_once, [&impl] {
        // A damaged .debug_info must not print LLVM's own warnings, nor end the process: the
        // first problem is kept (the data layout names it when no unit could be read).
        auto keep_first = [&impl](llvm::Error error) {
            std::string message = llvm::toString(std::move(error));
            if (impl.dwarf_problem.empty())
                impl.dwarf_problem = message;
        };
        impl.dwarf = llvm::DWARFContext::create(*impl.elf, llvm::DWARFContext::ProcessDebugRelocations::Process,
                                                nullptr, "", keep_first, keep_first);
    });
    return *impl.dwarf;
}

const std::string& first_dwarf_problem(const Image& image)
{
    return image.impl().dwarf_problem;
}

namespace {

// A section's load address (LMA) as objdump computes it: the PT_LOAD segment whose file bytes
// hold the section's, at the same distance from the segment's physical address (System V
// ABI, "Program Header"); its address where no segment holds it (.bss, debug sections).
uint32_t load_address_of(const llvm::object::ELF32LE::Shdr& section,
                         const std::vector<llvm::object::ELF32LE::Phdr>& segments)
{
    if ((section.sh_flags & llvm::ELF::SHF_ALLOC) == 0 || section.sh_type == llvm::ELF::SHT_NOBITS)
        return uint32_t(section.sh_addr);
    for (const auto& segment : segments) {
        if (segment.p_type != llvm::ELF::PT_LOAD)
            continue;
        const uint64_t offset = section.sh_offset, start = segment.p_offset;
        if (offset >= start && offset + section.sh_size <= start + segment.p_filesz && section.sh_addr >= segment.p_vaddr &&
            section.sh_addr - segment.p_vaddr == offset - start)
            return uint32_t(segment.p_paddr + (offset - start));
    }
    return uint32_t(section.sh_addr);
}

} // namespace

void Image::Impl::read_sections()
{
    // The ELFFile interface throughout: every step returns an Expected, where the
    // ObjectFile conveniences (getELFType, getName) abort the process on a damaged section.
    const auto& file = elf->getELFFile();
    auto headers = file.sections();
    if (!headers)
        throw Error(path, "section headers", llvm::toString(headers.takeError()));
    // A firmware ELF without program headers (a relocatable object, a damaged file) loads
    // nothing elsewhere: its sections' load addresses are their addresses.
    std::vector<llvm::object::ELF32LE::Phdr> program_headers;
    if (auto phdrs = file.program_headers())
        program_headers.assign(phdrs->begin(), phdrs->end());
    else
        llvm::consumeError(phdrs.takeError());
    for (unsigned i = 0; i < program_headers.size(); ++i) {
        const auto& header = program_headers[i];
        if (header.p_type == llvm::ELF::PT_LOAD)
            segments.push_back({i, uint32_t(header.p_offset), uint32_t(header.p_vaddr), uint32_t(header.p_paddr),
                                uint32_t(header.p_filesz), uint32_t(header.p_memsz)});
    }
    for (const auto& header : *headers) {
        Section section;
        if (auto name = file.getSectionName(header))
            section.name = name->str();
        else {
            llvm::consumeError(name.takeError());
            section.name = "?";
        }
        section.type = header.sh_type;
        section.flags = header.sh_flags;
        section.address = uint32_t(header.sh_addr);
        section.load_address = load_address_of(header, program_headers);
        section.size = uint32_t(header.sh_size);
        if (header.sh_type != llvm::ELF::SHT_NOBITS) {
            if (auto contents = file.getSectionContents(header)) {
                section.bytes = std::string_view(reinterpret_cast<const char*>(contents->data()), contents->size());
                section.readable = true;
            } else {
                llvm::consumeError(contents.takeError());   // a damaged section: no bytes, still its range
            }
        }
        sections.push_back(std::move(section));
    }
}

FirmwareIdentity Image::Impl::find_identity() const
{
    // The build-id first: a note of a few bytes, where a digest reads every loaded byte.
    for (const Section& section : sections)
        if (section.type == llvm::ELF::SHT_NOTE) {
            if (!section.readable)
                throw Error(path, "section headers", "section " + section.name + " lies outside the file");
            if (auto id = build_id_in(section.bytes))
                return {"build-id", *id};
        }
    llvm::SHA256 digest;
    for (const Section& section : sections) {
        if (!section.allocated() || section.type == llvm::ELF::SHT_NOBITS)
            continue;   // .bss has no bytes in the file; debug sections are not the firmware
        if (!section.readable)
            throw Error(path, "section headers", "section " + section.name + " lies outside the file");
        const uint8_t place[8] = {uint8_t(section.address),       uint8_t(section.address >> 8),
                                  uint8_t(section.address >> 16), uint8_t(section.address >> 24),
                                  uint8_t(section.size),          uint8_t(section.size >> 8),
                                  uint8_t(section.size >> 16),    uint8_t(section.size >> 24)};
        digest.update(llvm::ArrayRef<uint8_t>(place));
        digest.update(llvm::StringRef(section.bytes.data(), section.bytes.size()));
    }
    const auto sum = digest.final();   // std::array<uint8_t, 32> since LLVM 15
    return {"sha256", hex_bytes(sum.data(), sum.size())};
}

ArmAttributes Image::Impl::read_attributes() const
{
    ArmAttributes result;
    for (const Section& section : sections) {
        if (section.type != llvm::ELF::SHT_ARM_ATTRIBUTES || !section.readable)
            continue;
        llvm::ARMAttributeParser parser;
        const llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t*>(section.bytes.data()),
                                            section.bytes.size());
        if (llvm::Error error = parser.parse(bytes, llvm::endianness::little))
            throw Error(path, section.name, "cannot read the build attributes: " + llvm::toString(std::move(error)));
        result.cpu_arch = parser.getAttributeValue(llvm::ARMBuildAttrs::CPU_arch);
        result.profile = parser.getAttributeValue(llvm::ARMBuildAttrs::CPU_arch_profile);
        result.fp_arch = parser.getAttributeValue(llvm::ARMBuildAttrs::FP_arch);
        if (auto name = parser.getAttributeString(llvm::ARMBuildAttrs::CPU_name))
            result.cpu_name = name->str();
        break;
    }
    return result;
}

Image::Image(std::unique_ptr<Impl> impl) : impl_(std::move(impl))
{
    // ELF's identification bytes (System V ABI, e_ident[EI_MAG0..3]): without them LLVM
    // guesses another format and its words name that one's problem.
    if (!impl_->buffer->getBuffer().starts_with("\x7f" "ELF"))
        throw Error(impl_->path, "offset 0",
                    "not an ELF file (no 0x7f 'ELF' at its start): a raw .bin or .hex image? give the .elf the "
                    "linker wrote");
    auto binary = llvm::object::ObjectFile::createObjectFile(impl_->buffer->getMemBufferRef());
    if (!binary)
        throw Error(impl_->path, "", "cannot read ELF: " + llvm::toString(binary.takeError()));
    impl_->object = std::move(*binary);
    impl_->elf = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(impl_->object.get());
    if (impl_->elf == nullptr)
        throw Error(impl_->path, "ELF header", "not a 32-bit little-endian ELF (Cortex-M firmware is ELF32 ARM)");
    const unsigned machine = impl_->elf->getELFFile().getHeader().e_machine;
    if (machine != llvm::ELF::EM_ARM)
        throw Error(impl_->path, "ELF header", "ELF machine is " + std::to_string(machine) + ", not ARM (40)");
    impl_->read_sections();
}

Image Image::open(const std::string& elf_path)
{
    // Mapped, not read: LLVM maps a file this large, and only the pages read are touched.
    auto buffer = llvm::MemoryBuffer::getFile(elf_path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer)
        throw Error(elf_path, "", "cannot read ELF: " + buffer.getError().message());
    auto impl = std::make_unique<Impl>();
    impl->path = elf_path;
    impl->buffer = std::move(*buffer);
    return Image(std::move(impl));
}

Image Image::parse(std::string_view image, const std::string& name)
{
    auto impl = std::make_unique<Impl>();
    impl->path = name;
    impl->buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(image.data(), image.size()), name);
    return Image(std::move(impl));
}

Image::~Image() = default;
Image::Image(Image&&) noexcept = default;
Image& Image::operator=(Image&&) noexcept = default;

const std::string& Image::path() const { return impl_->path; }
const std::vector<Section>& Image::sections() const { return impl_->sections; }
const std::vector<Segment>& Image::load_segments() const { return impl_->segments; }

const Section* Image::section(std::string_view name) const
{
    for (const Section& section : impl_->sections)
        if (section.name == name)
            return &section;
    return nullptr;
}

std::optional<uint32_t> Image::word(uint32_t address) const
{
    for (const Section& section : impl_->sections)
        if (section.loaded() && address >= section.address && uint64_t(address - section.address) + 4 <= section.bytes.size())
            return word_at(reinterpret_cast<const uint8_t*>(section.bytes.data()) + (address - section.address));
    return std::nullopt;
}

std::vector<uint32_t> Image::vector_table(size_t most_words) const
{
    const Section* lowest = nullptr;
    for (const Section& section : impl_->sections)
        if (section.loaded() && !section.copied() && section.bytes.size() >= 4 &&
            (lowest == nullptr || section.address < lowest->address))
            lowest = &section;
    std::vector<uint32_t> words;
    if (lowest == nullptr)
        return words;
    const auto* p = reinterpret_cast<const uint8_t*>(lowest->bytes.data());
    for (size_t i = 0; i + 4 <= lowest->bytes.size() && words.size() < most_words; i += 4)
        words.push_back(word_at(p + i));
    return words;
}

std::optional<uint32_t> Image::entry_point() const
{
    const uint32_t entry = uint32_t(impl_->elf->getELFFile().getHeader().e_entry) & ~1u;
    // GNU ld, given no ENTRY and no _start, takes the start of the first code section (.text)
    // and says so only as a warning: that address names no entry point.
    const Section* first_code = nullptr;
    bool in_code = false;
    for (const Section& section : impl_->sections) {
        if (!section.runs_code())
            continue;
        if (first_code == nullptr || section.address < first_code->address)
            first_code = &section;
        in_code = in_code || (entry >= section.address && entry < section.end());
    }
    if (!in_code || entry == first_code->address)
        return std::nullopt;
    return entry;
}

void Image::check_dwarf_units() const
{
    std::call_once(impl_->dwarf_headers_once, [this] { impl_->dwarf_check = DebugEntryCheck::of(*this); });
}

void Image::check_dwarf_unit_at(uint64_t offset) const
{
    check_dwarf_units();
    check_unit_entries(*impl_, offset);
}

void Image::check_dwarf() const
{
    check_dwarf_units();
    check_all_entries(*impl_);
}

void check_unit_entries(const Image::Impl& image, uint64_t offset)
{
    const std::lock_guard<std::mutex> lock(image.dwarf_mutex);
    image.dwarf_check->check_unit_at(offset);
}

void check_unit_read_by_llvm(const Image::Impl& image, llvm::DWARFUnit& unit)
{
    if (unit.getUnitDIE(/*ExtractUnitDIEOnly=*/false))
        return;
    const std::string& problem = image.dwarf_problem;
    throw Error(image.path, ".debug_info at " + hex32(uint32_t(unit.getOffset())),
                "LLVM reads no entries from this unit" + (problem.empty() ? std::string() : ": " + problem));
}

void check_all_entries(const Image::Impl& image)
{
    const std::lock_guard<std::mutex> lock(image.dwarf_mutex);
    image.dwarf_check->check_all();   // the units already checked are not read again
}

const SymbolTable& Image::symbols() const
{
    std::call_once(impl_->symbols_once, [this] { impl_->symbols = std::make_unique<SymbolTable>(SymbolTable::load(*this)); });
    return *impl_->symbols;
}

SourceLocator& Image::locator() const
{
    std::call_once(impl_->locator_once, [this] { impl_->locator = std::make_unique<SourceLocator>(*this); });
    return *impl_->locator;
}

const DataLayout& Image::data_layout() const
{
    std::call_once(impl_->layout_once, [this] { impl_->layout = std::make_unique<DataLayout>(*this); });
    return *impl_->layout;
}

const FirmwareIdentity& Image::identity() const
{
    std::call_once(impl_->identity_once, [this] { impl_->identity = impl_->find_identity(); });
    return impl_->identity;
}

const ArmAttributes& Image::attributes() const
{
    std::call_once(impl_->attributes_once, [this] { impl_->attributes = impl_->read_attributes(); });
    return impl_->attributes;
}

namespace {

bool has_bytes(const Image& firmware, std::string_view name)
{
    const Section* section = firmware.section(name);
    return section != nullptr && section->readable && section->size > 0;
}

} // namespace

bool Image::has_debug_info() const { return has_bytes(*this, ".debug_info"); }
bool Image::has_line_tables() const { return has_bytes(*this, ".debug_line"); }
bool Image::has_call_frames() const { return has_bytes(*this, ".debug_frame") || has_bytes(*this, ".ARM.exidx"); }

} // namespace mcuprof::core
