#include "mcuprof/image/dwarf_check.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/Object/Decompressor.h>
#include <llvm/Support/Error.h>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"

namespace mcuprof::core {
namespace {

namespace dw = llvm::dwarf;

std::string hex(uint64_t value) { return "0x" + llvm::utohexstr(value, /*LowerCase=*/true); }

// What a read is for, spelled out only when it fails: a description, or a value of a form
// ("a DW_FORM_block2 value", "a DW_FORM_block2 value's length").
struct What {
    What(const char* text) : text(text) {}
    What(uint64_t form, const char* suffix) : form(form), suffix(suffix) {}
    std::string str() const
    {
        if (text != nullptr)
            return text;
        llvm::StringRef known = dw::FormEncodingString(unsigned(form));
        return (known.empty() ? "a value of form " + hex(form) : "a " + known.str() + " value") + suffix;
    }
    const char* text = nullptr;
    uint64_t form = 0;
    const char* suffix = "";
};

// Reads a section from an offset up to a limit (the end of the section, or of the unit being
// read); a read that would cross the limit throws, naming the section and the offset the
// read started at.
class Reader {
public:
    Reader(const std::string& elf_path, const std::string& section, std::string_view bytes, bool little_endian,
           uint64_t offset, uint64_t limit, std::string limit_name)
        : elf_path_(elf_path), section_(section), bytes_(bytes), little_endian_(little_endian), offset_(offset),
          limit_(limit), limit_name_(std::move(limit_name))
    {
    }

    uint64_t offset() const { return offset_; }
    bool at_limit() const { return offset_ >= limit_; }
    uint64_t left() const { return limit_ - offset_; }

    [[noreturn]] void fail(uint64_t at, const std::string& problem) const
    {
        throw Error(elf_path_, section_ + " at " + hex(at), problem);
    }

    // `from`: where the value began, when its length came first (a block's).
    void skip(uint64_t size, const What& what, std::optional<uint64_t> from = std::nullopt)
    {
        if (size > limit_ - offset_)
            fail(from.value_or(offset_), what.str() + " of " + hex(size) + " bytes" + runs_past());
        offset_ += size;
    }

    uint64_t unsigned_(unsigned size, const What& what)
    {
        const uint64_t start = offset_;
        skip(size, what);
        uint64_t value = 0;
        for (unsigned i = 0; i < size; ++i) {
            const uint64_t byte = static_cast<uint8_t>(bytes_[start + (little_endian_ ? i : size - 1 - i)]);
            value |= byte << (8 * i);
        }
        return value;
    }

    // LEB128 (DWARF 5 section 7.6): seven bits a byte, the last byte's top bit clear.
    uint64_t leb128(const What& what, bool is_signed = false)
    {
        const uint64_t start = offset_;
        uint64_t value = 0;
        unsigned shift = 0;
        while (true) {
            if (offset_ >= limit_)
                fail(start, what.str() + runs_past());
            const uint8_t byte = static_cast<uint8_t>(bytes_[offset_++]);
            if (shift >= 64 || (shift == 63 && (byte & 0x7f) > 1 && !is_signed))
                fail(start, what.str() + " does not fit in 64 bits");
            value |= uint64_t(byte & 0x7f) << shift;
            shift += 7;
            if ((byte & 0x80) == 0)
                return value;
        }
    }

    void c_string(const What& what)
    {
        const size_t end = bytes_.find('\0', offset_);
        if (end == std::string_view::npos || end >= limit_)
            fail(offset_, what.str() + " has no terminating NUL before the end of " + limit_name_ + " (" + hex(limit_) + ")");
        offset_ = end + 1;
    }

private:
    std::string runs_past() const { return " runs past the end of " + limit_name_ + " (" + hex(limit_) + ")"; }

    const std::string& elf_path_;
    const std::string& section_;
    std::string_view bytes_;
    bool little_endian_;
    uint64_t offset_;
    uint64_t limit_;
    std::string limit_name_;
};

// What a unit's header says about the size of its values (DWARF 5 section 7.5.1).
struct UnitParameters {
    unsigned version = 0;
    unsigned address_size = 0;
    unsigned offset_size = 4;   // 8 in the 64-bit DWARF format

    bool operator==(const UnitParameters& other) const
    {
        return version == other.version && address_size == other.address_size && offset_size == other.offset_size;
    }
    bool operator!=(const UnitParameters& other) const { return !(*this == other); }
};

// A value's size when its form fixes it, from LLVM's own table (DWARF 5 section 7.5.6, table
// 7.6), so that the check sizes values as the reader it protects does; nothing for a form
// sized by its value, or unknown.
std::optional<uint64_t> fixed_form_size(uint64_t form, const UnitParameters& unit)
{
    if (form > 0xffff)
        return std::nullopt;
    const dw::FormParams parameters{uint16_t(unit.version), uint8_t(unit.address_size),
                                    unit.offset_size == 8 ? dw::DWARF64 : dw::DWARF32};
    if (auto size = dw::getFixedFormByteSize(dw::Form(form), parameters))
        return *size;
    return std::nullopt;
}

// One abbreviation: the forms of its attributes in order.
struct Abbreviation {
    std::vector<uint64_t> forms;
    // A form whose value may name an entry of another unit (DW_FORM_ref_addr, DW_FORM_ref_sig8,
    // or DW_FORM_indirect, which can stand for either): its entries are read value by value.
    bool refers_out = false;

    // What an entry's values come to when every form fixes its size (LLVM then skips them all
    // at once), worked out for one unit's parameters and kept while they stay the same.
    std::optional<uint64_t> fixed_size(const UnitParameters& unit) const
    {
        if (!fixed_for || *fixed_for != unit) {
            fixed_for = unit;
            fixed = 0;
            for (uint64_t form : forms) {
                const std::optional<uint64_t> size = fixed_form_size(form, unit);
                if (!size) {
                    fixed.reset();
                    break;
                }
                *fixed += *size;
            }
        }
        return fixed;
    }

private:
    mutable std::optional<uint64_t> fixed;
    mutable std::optional<UnitParameters> fixed_for;
};
using AbbreviationTable = std::unordered_map<uint64_t, Abbreviation>;

const std::string abbrev_name = ".debug_abbrev";

// The abbreviation table at an offset of .debug_abbrev (DWARF 5 section 7.5.3): code, tag,
// children flag, then attribute and form pairs up to a pair of zeros; a code of 0 ends the
// table. When a code repeats, the first declaration is the one LLVM finds.
AbbreviationTable read_abbreviations(const DebugSections& sections, uint64_t offset, const std::string& elf_path)
{
    std::string_view bytes = sections.abbreviations;
    Reader in(elf_path, abbrev_name, bytes, sections.little_endian, offset, bytes.size(), "the section");
    AbbreviationTable table;
    while (true) {
        const uint64_t declaration = in.offset();
        const uint64_t code = in.leb128("an abbreviation code");
        if (code == 0)
            return table;
        // LLVM keeps codes in 32 bits: a longer one would stand for another.
        if (code > 0xffffffff)
            in.fail(declaration, "abbreviation code " + hex(code) + " does not fit in 32 bits");
        if (in.leb128("an abbreviation's tag") == 0)
            in.fail(declaration, "abbreviation " + std::to_string(code) + " has tag 0");
        in.unsigned_(1, "an abbreviation's children flag");
        Abbreviation abbreviation;
        while (true) {
            const uint64_t pair = in.offset();
            const uint64_t attribute = in.leb128("an attribute name");
            const uint64_t form = in.leb128("an attribute form");
            if (attribute == 0 && form == 0)
                break;
            if (attribute == 0 || form == 0)
                in.fail(pair, "abbreviation " + std::to_string(code) + " has an attribute with " +
                                  (attribute == 0 ? "name" : "form") + " 0");
            if (form == dw::DW_FORM_implicit_const)
                in.leb128("an implicit constant", /*is_signed=*/true);
            abbreviation.forms.push_back(form);
            abbreviation.refers_out |= form == dw::DW_FORM_ref_addr || form == dw::DW_FORM_ref_sig8 ||
                                       form == dw::DW_FORM_indirect;
        }
        table.emplace(code, std::move(abbreviation));
    }
}

// Where a unit's entries point outside it: what LLVM reads next when it follows them.
struct References {
    std::vector<uint64_t> info_offsets;   // DW_FORM_ref_addr: an offset in .debug_info
    bool type_units = false;              // DW_FORM_ref_sig8: a type unit, found by its signature
};

// Steps over one attribute value of a form (DWARF 5 section 7.5.6, table 7.6; and the GNU
// extensions LLVM 14 reads), as LLVM's DWARFFormValue::skipValue does, but within the unit;
// a reference to another unit is kept in `references`.
void skip_value(Reader& in, uint64_t form, const UnitParameters& unit, References& references)
{
    const uint64_t start = in.offset();
    // DW_FORM_indirect: the form comes first, in the entry itself (a loop, not recursion:
    // corrupt data can chain any number of them).
    while (form == dw::DW_FORM_indirect)
        form = in.leb128("an indirect form");
    const What name(form, "");
    const What length(form, "'s length");
    if (const std::optional<uint64_t> size = fixed_form_size(form, unit)) {
        if (form == dw::DW_FORM_ref_addr)
            references.info_offsets.push_back(in.unsigned_(unsigned(*size), name));
        else
            in.skip(*size, name);
        references.type_units |= form == dw::DW_FORM_ref_sig8;
        return;
    }
    switch (form) {
    case dw::DW_FORM_sdata: in.leb128(name, /*is_signed=*/true); return;
    case dw::DW_FORM_udata:
    case dw::DW_FORM_ref_udata:
    case dw::DW_FORM_strx:
    case dw::DW_FORM_addrx:
    case dw::DW_FORM_loclistx:
    case dw::DW_FORM_rnglistx:
    case dw::DW_FORM_GNU_addr_index:
    case dw::DW_FORM_GNU_str_index: in.leb128(name); return;
    case dw::DW_FORM_string: in.c_string(name); return;
    case dw::DW_FORM_block1: in.skip(in.unsigned_(1, length), name, start); return;
    case dw::DW_FORM_block2: in.skip(in.unsigned_(2, length), name, start); return;
    case dw::DW_FORM_block4: in.skip(in.unsigned_(4, length), name, start); return;
    case dw::DW_FORM_block:
    case dw::DW_FORM_exprloc: in.skip(in.leb128(length), name, start); return;
    default: in.fail(start, "an attribute of unknown form " + hex(form));
    }
}

// One unit as its header describes it: where it lies, the sizes of its values, its
// abbreviations.
struct Unit {
    const DebugInfoSection* section = nullptr;
    uint64_t offset = 0;    // of its header
    uint64_t entries = 0;   // of its first entry
    uint64_t end = 0;
    UnitParameters parameters;
    uint64_t abbreviations = 0;
    const AbbreviationTable* table = nullptr;
    bool type_unit = false;
    bool checked = false;   // every entry
};

// A unit's header (DWARF 5 section 7.5.1) at `offset`, checked against the section and what
// LLVM reads.
Unit read_unit_header(const DebugSections& sections, const DebugInfoSection& section, uint64_t offset,
                      const std::string& elf_path)
{
    const std::string_view bytes = section.bytes;
    Unit unit_read;
    unit_read.section = &section;
    unit_read.offset = offset;
    Reader header(elf_path, section.name, bytes, sections.little_endian, offset, bytes.size(), "the section");
    UnitParameters& unit = unit_read.parameters;
    uint64_t length = header.unsigned_(4, "a unit length");
    if (length == 0xffffffff) {   // the 64-bit DWARF format (DWARF 5 section 7.4)
        unit.offset_size = 8;
        length = header.unsigned_(8, "a 64-bit unit length");
    } else if (length >= 0xfffffff0) {
        header.fail(offset, "unit length " + hex(length) + " is a reserved value");
    }
    const uint64_t start = header.offset();
    if (length > bytes.size() - start)
        header.fail(offset, "unit length " + hex(length) + " runs past the end of the section (" + hex(bytes.size()) +
                                ")");
    const uint64_t end = start + length;
    unit_read.end = end;
    Reader in(elf_path, section.name, bytes, sections.little_endian, start, end, "the unit at " + hex(offset));

    unit.version = unsigned(in.unsigned_(2, "a unit's version"));
    if (unit.version < 2 || unit.version > 5)
        in.fail(start, "DWARF version " + std::to_string(unit.version) + " (2 to 5 are read)");
    uint64_t unit_type = section.type_units ? dw::DW_UT_type : dw::DW_UT_compile;
    const uint64_t address_size_at = in.offset() + (unit.version >= 5 ? 1 : unit.offset_size);
    if (unit.version >= 5) {
        unit_type = in.unsigned_(1, "a unit type");
        if (unit_type < dw::DW_UT_compile || unit_type > dw::DW_UT_split_type)
            in.fail(in.offset() - 1, "unknown unit type " + hex(unit_type));
        unit.address_size = unsigned(in.unsigned_(1, "an address size"));
        unit_read.abbreviations = in.unsigned_(unit.offset_size, "an abbreviation offset");
    } else {
        unit_read.abbreviations = in.unsigned_(unit.offset_size, "an abbreviation offset");
        unit.address_size = unsigned(in.unsigned_(1, "an address size"));
    }
    if (unit.address_size != 2 && unit.address_size != 4 && unit.address_size != 8)
        in.fail(address_size_at, "address size " + std::to_string(unit.address_size) + " (2, 4 or 8 are read)");
    unit_read.type_unit = unit_type == dw::DW_UT_type || unit_type == dw::DW_UT_split_type;
    if (unit_read.type_unit) {
        in.unsigned_(8, "a type signature");
        const uint64_t type_at = in.offset();
        const uint64_t type_offset = in.unsigned_(unit.offset_size, "a type offset");
        if (type_offset < in.offset() - offset || type_offset >= end - offset)
            in.fail(type_at, "type offset " + hex(type_offset) + " is outside its unit's entries");
    } else if (unit_type == dw::DW_UT_skeleton || unit_type == dw::DW_UT_split_compile) {
        in.unsigned_(8, "a unit id");
    }
    if (unit_read.abbreviations >= sections.abbreviations.size())
        in.fail(offset, "abbreviation offset " + hex(unit_read.abbreviations) + " is past the end of " + abbrev_name +
                            " (" + hex(sections.abbreviations.size()) + " bytes)");
    unit_read.entries = in.offset();
    return unit_read;
}

// A unit's entries (DWARF 5 section 7.5.2): an abbreviation code, then one value per
// attribute of that abbreviation; code 0 is a null entry that ends a list of children. Only
// the first (the unit's own entry) when `first_only`. Throws at the first that does not fit.
void check_entries(const DebugSections& sections, const Unit& unit, bool first_only, References& references,
                   const std::string& elf_path)
{
    const DebugInfoSection& section = *unit.section;
    Reader in(elf_path, section.name, section.bytes, sections.little_endian, unit.entries, unit.end,
              "the unit at " + hex(unit.offset));
    while (!in.at_limit()) {
        const uint64_t entry = in.offset();
        const uint64_t code = in.leb128("an abbreviation code");
        if (code == 0)
            continue;
        auto abbreviation = unit.table->find(code);
        if (abbreviation == unit.table->end())
            in.fail(entry, "abbreviation code " + std::to_string(code) + " is not in the unit's table at " +
                               abbrev_name + " " + hex(unit.abbreviations));
        // All at once when every value has a fixed size, they fit, and none refers to another
        // unit (most entries); value by value otherwise, which also finds the one that does not
        // fit.
        const Abbreviation& declared = abbreviation->second;
        if (const std::optional<uint64_t> fixed = declared.fixed_size(unit.parameters);
            fixed && *fixed <= in.left() && !declared.refers_out)
            in.skip(*fixed, "an entry's values");
        else
            for (uint64_t form : declared.forms)
                skip_value(in, form, unit.parameters, references);
        if (first_only)
            return;
    }
}

// A section's name as LLVM's DWARFContext maps it: without its leading '.', '_' and 'z'
// characters (".debug_info", "__debug_info" in Mach-O, ".zdebug_info" compressed by GNU).
llvm::StringRef dwarf_name(llvm::StringRef name) { return name.drop_while([](char c) { return c == '.' || c == '_' || c == 'z'; }); }

// zlib cannot expand data more than 1032 times (its deflate's largest ratio); a compressed
// section whose header states more is corrupt, and LLVM would allocate that size.
constexpr uint64_t most_zlib_expansion = 1032;

} // namespace

struct DebugEntryCheck::Impl {
    DebugSections sections;
    std::string elf_path;
    std::vector<std::unique_ptr<llvm::SmallString<0>>> decompressed;   // what `sections` points into
    std::map<uint64_t, AbbreviationTable> tables;                      // by offset in .debug_abbrev
    std::vector<Unit> units;                                           // in section order, by offset

    void read_headers();
    void check(Unit& unit);
};

void DebugEntryCheck::Impl::read_headers()
{
    for (const DebugInfoSection& section : sections.units)
        for (uint64_t offset = 0; offset < section.bytes.size();) {
            Unit unit = read_unit_header(sections, section, offset, elf_path);
            auto table = tables.find(unit.abbreviations);
            if (table == tables.end())
                table = tables.emplace(unit.abbreviations, read_abbreviations(sections, unit.abbreviations, elf_path)).first;
            unit.table = &table->second;
            References ignored;   // the unit's own entry names no other unit LLVM follows
            check_entries(sections, unit, /*first_only=*/true, ignored, elf_path);
            offset = unit.end;
            units.push_back(unit);
        }
}

void DebugEntryCheck::Impl::check(Unit& first)
{
    std::vector<Unit*> pending{&first};
    while (!pending.empty()) {
        Unit& unit = *pending.back();
        pending.pop_back();
        if (unit.checked)
            continue;
        References references;
        check_entries(sections, unit, /*first_only=*/false, references, elf_path);
        unit.checked = true;
        if (references.info_offsets.empty() && !references.type_units)
            continue;
        std::sort(references.info_offsets.begin(), references.info_offsets.end());
        for (Unit& other : units) {
            const auto at = std::lower_bound(references.info_offsets.begin(), references.info_offsets.end(), other.offset);
            const bool referred = !other.section->type_units && at != references.info_offsets.end() && *at < other.end;
            if (!other.checked && (referred || (references.type_units && other.type_unit)))
                pending.push_back(&other);
        }
    }
}

DebugEntryCheck::DebugEntryCheck(const DebugSections& sections, const std::string& elf_path)
    : impl_(std::make_unique<Impl>())
{
    impl_->sections = sections;
    impl_->elf_path = elf_path;
    impl_->read_headers();
}

DebugEntryCheck::~DebugEntryCheck() = default;

void DebugEntryCheck::check_unit_at(uint64_t offset)
{
    for (Unit& unit : impl_->units)
        if (!unit.section->type_units && offset >= unit.offset && offset < unit.end)
            impl_->check(unit);
}

void DebugEntryCheck::check_all()
{
    for (Unit& unit : impl_->units)
        impl_->check(unit);
}

void check_debug_entries(const DebugSections& sections, const std::string& elf_path)
{
    DebugEntryCheck(sections, elf_path).check_all();
}

std::unique_ptr<DebugEntryCheck> DebugEntryCheck::of(const Image& image)
{
    const std::string& elf_path = image.path();
    DebugSections sections;   // ELF32 little-endian: Image accepts no other
    std::vector<std::unique_ptr<llvm::SmallString<0>>> decompressed;   // moved into the check
    for (const Section& section : image.sections()) {
        const llvm::StringRef kind = dwarf_name(section.name);
        if (kind != "debug_info" && kind != "debug_types" && kind != "debug_abbrev")
            continue;
        if (!section.readable)
            continue;
        llvm::StringRef bytes(section.bytes.data(), section.bytes.size());
        if (section.compressed()) {   // SHF_COMPRESSED (LLVM 19 reads no .zdebug sections)
            auto decompressor = llvm::object::Decompressor::create(section.name, bytes, /*IsLE=*/true, /*Is64Bit=*/false);
            if (!decompressor) {
                llvm::consumeError(decompressor.takeError());
                continue;   // LLVM cannot read it either, and leaves it out
            }
            if (decompressor->getDecompressedSize() / most_zlib_expansion > bytes.size())
                throw Error(elf_path, section.name,
                            "compressed section states " + hex(decompressor->getDecompressedSize()) +
                                " bytes, more than zlib can make of " + hex(bytes.size()));
            decompressed.push_back(std::make_unique<llvm::SmallString<0>>());
            if (auto error = decompressor->resizeAndDecompress(*decompressed.back()))
                throw Error(elf_path, section.name, "cannot decompress: " + llvm::toString(std::move(error)));
            bytes = decompressed.back()->str();
        }
        if (kind == "debug_abbrev")
            sections.abbreviations = std::string_view(bytes.data(), bytes.size());   // the last one, as in LLVM
        else
            sections.units.push_back({section.name, std::string_view(bytes.data(), bytes.size()), kind == "debug_types"});
    }
    auto check = std::make_unique<DebugEntryCheck>(sections, elf_path);
    check->impl_->decompressed = std::move(decompressed);   // the buffers stay where they are
    return check;
}

} // namespace mcuprof::core
