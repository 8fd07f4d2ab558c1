#include "mcuprof/image/source_locator.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/DebugInfo/DWARF/DWARFCompileUnit.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDie.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include "firmware_object.h"
#include "mcuprof/image/demangle.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

using FileLineInfoKind = llvm::DILineInfoSpecifier::FileLineInfoKind;

std::string base_name(const std::string& path)
{
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A function as DWARF describes it once (DWARF 5, 3.3.8.1: the abstract instance that every
// DW_TAG_inlined_subroutine's DW_AT_abstract_origin points at): its name and declaration.
struct DwarfFunction {
    std::string name;          // demangled (demangle.h)
    std::string decl_file;     // DW_AT_decl_file, as a path
    uint64_t decl_line = 0;    // DW_AT_decl_line
    uint64_t offset = 0;       // the DIE's offset in .debug_info
    std::string linkage;       // DW_AT_linkage_name, "" when it has none
    // Another function of its compile unit has the same name and declaration (two
    // instances of a template whose arguments print alike: std::sort of two lambdas of one
    // signature; two instances of a Rust generic under legacy mangling, whose names drop the
    // arguments): only the linkage name, or without one the DIE, tells them apart.
    bool alike_in_unit = false;

    // One function may have an abstract instance in each unit that inlines it (a header's
    // inline function): those are one function, by name and declaration. rustc also writes
    // several abstract instances of one function into one unit (core's wrapping_mul, inlined
    // from several places): one linkage name, one function.
    std::string identity() const
    {
        return alike_in_unit ? linkage_or_die() : decl_file + ":" + std::to_string(decl_line);
    }

    // What tells apart functions of one name and declaration: the linkage name, else the DIE.
    std::string linkage_or_die() const
    {
        return linkage.empty() ? "die " + std::to_string(offset) : "linkage " + linkage;
    }
};

// DW_AT_decl_file of a DIE or of the DIE it completes (DW_AT_abstract_origin,
// DW_AT_specification), as a path from its own unit's line table. LLVM 19's
// DWARFDie::getDeclFile loses the unit of a DW_FORM_implicit_const value, the form GCC 12
// gives decl_file in DWARF 5, and answers "" for most functions.
std::string decl_file(llvm::DWARFDie die)
{
    for (int depth = 0; depth < 4 && die.isValid(); ++depth) {
        if (std::optional<llvm::DWARFFormValue> index = die.find(llvm::dwarf::DW_AT_decl_file)) {
            llvm::DWARFUnit* unit = die.getDwarfUnit();
            std::string path;
            if (const llvm::DWARFDebugLine::LineTable* table = unit->getContext().getLineTableForUnit(unit))
                if (std::optional<uint64_t> n = index->getAsUnsignedConstant())
                    table->getFileNameByIndex(*n, unit->getCompilationDir(), FileLineInfoKind::AbsoluteFilePath, path);
            return path;
        }
        llvm::DWARFDie next = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_abstract_origin);
        die = next.isValid() ? next : die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_specification);
    }
    return {};
}

// A function without a linkage name (GCC gives none to one of internal linkage that exists
// only inlined: next_random in an anonymous namespace): its DW_AT_name qualified by the
// namespaces and classes its declaration is nested in (DWARF 5, 3.2.2 and 5.7), the way gdb
// names such a function, "(anonymous namespace)::next_random". A scope without a name other
// than a namespace (a lambda's closure type), or a function (a local class), ends the
// qualification there: no name c++filt could print reaches it.
std::string qualified_name(llvm::DWARFDie die)
{
    const char* name = die.getShortName();
    if (name == nullptr)
        return {};
    // The declaration is the DIE in its scope: the concrete or abstract instance refers to it.
    for (int depth = 0; depth < 4; ++depth) {
        llvm::DWARFDie next = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_abstract_origin);
        if (!next.isValid())
            next = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_specification);
        if (!next.isValid())
            break;
        die = next;
    }
    std::string qualified = name;
    for (llvm::DWARFDie scope = die.getParent(); scope.isValid(); scope = scope.getParent()) {
        const llvm::dwarf::Tag tag = scope.getTag();
        const char* scope_name = scope.getShortName();
        if (tag == llvm::dwarf::DW_TAG_namespace)
            qualified = std::string(scope_name ? scope_name : "(anonymous namespace)") + "::" + qualified;
        else if ((tag == llvm::dwarf::DW_TAG_class_type || tag == llvm::dwarf::DW_TAG_structure_type ||
                  tag == llvm::dwarf::DW_TAG_union_type) && scope_name != nullptr)
            qualified = std::string(scope_name) + "::" + qualified;
        else
            break;
    }
    return qualified;
}

DwarfFunction describe(const llvm::DWARFDie& die)
{
    DwarfFunction f;
    if (const char* linkage = die.getLinkageName()) {
        f.name = demangle(linkage);
        f.linkage = linkage;
    } else
        f.name = qualified_name(die);
    // A lambda's operator() has no declaration of its own (GCC marks it artificial): the
    // closure type it is a member of (DW_AT_object_pointer's type, through pointer and const)
    // is declared where the lambda is written.
    llvm::DWARFDie declared = die;
    if (die.getDeclLine() == 0)
        if (llvm::DWARFDie closure = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_object_pointer)) {
            declared = closure.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_type);
            while (declared.isValid() && declared.getDeclLine() == 0)
                declared = declared.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_type);
            if (!declared.isValid())
                declared = die;
        }
    f.decl_file = decl_file(declared);
    f.decl_line = declared.getDeclLine();
    f.offset = die.getOffset();
    return f;
}

} // namespace

struct SourceLocator::Impl {
    std::optional<Image> owned;   // parse(): the image this locator was given in memory
    // The image's DWARF context: read from the image's object, not from the path again, so
    // what is read is what was checked (and no separate debug file is looked for).
    llvm::DWARFContext* dwarf = nullptr;
    const SymbolTable* symbols = nullptr;   // the outermost frame's name (the set's, of several)
    const Image::Impl* image = nullptr;     // for the checks of its DWARF, a unit at a time
    // Of a set of several images: one locator for each, in the set's order, with the image's
    // own symbols, whose code tells the image of an address (as ImageSet::image_at). Both live
    // in the images' parts, which stay where they are when the set moves.
    std::vector<std::pair<const SymbolTable*, std::unique_ptr<SourceLocator>>> per_image;

    // Labels of inlined functions, by the abstract instance's DIE offset. Built on the first
    // inlined frame (a profile without inline chains never reads all of the DWARF).
    bool labels_built = false;
    std::unordered_map<uint64_t, std::string> label_of_origin;

    void build_labels();
    std::string label(const llvm::DWARFDie& inlined);

    // The entries of the unit that holds an address (and of the units they refer to), checked
    // before LLVM reads them; finding the unit reads only what the header pass checked.
    void check_unit_of(uint32_t address) const
    {
        if (llvm::DWARFCompileUnit* unit = dwarf->getCompileUnitForCodeAddress(address)) {
            check_unit_entries(*image, unit->getOffset());
            check_unit_read_by_llvm(*image, *unit);
        }
    }
};

// Every function DWARF describes, by name; where two or more functions share a name
// (statics of two files, lambdas' operator(), template instances that print alike), each
// is told apart the way label_functions tells symbols apart: by its declaration's file,
// " (unit_a.cpp)", else by file and line, " (main.cpp:74)", else by its DIE, " (DIE 0x409c)".
void SourceLocator::Impl::build_labels()
{
    check_all_entries(*image);   // every unit's entries are read below
    labels_built = true;
    std::map<std::string, std::vector<DwarfFunction>> by_name;
    for (const auto& unit : dwarf->compile_units()) {
        std::map<std::tuple<std::string, std::string, uint64_t>, std::vector<size_t>> in_unit;
        for (const llvm::DWARFDebugInfoEntry& entry : unit->dies()) {
            const llvm::DWARFDie die(unit.get(), &entry);
            // A concrete instance (DW_AT_abstract_origin) or a declaration is a function
            // described elsewhere.
            if (die.getTag() != llvm::dwarf::DW_TAG_subprogram || die.find(llvm::dwarf::DW_AT_abstract_origin) ||
                die.find(llvm::dwarf::DW_AT_declaration))
                continue;
            DwarfFunction f = describe(die);
            if (f.name.empty())
                continue;
            auto& list = by_name[f.name];
            in_unit[{f.name, f.decl_file, f.decl_line}].push_back(list.size());
            list.push_back(std::move(f));
        }
        // Alike: two or more functions behind one name and declaration, which DIEs of one
        // linkage name are not (each DIE without one counts as a function of its own).
        for (const auto& [key, indices] : in_unit) {
            std::vector<DwarfFunction>& list = by_name[std::get<0>(key)];
            std::set<std::string> distinct;
            for (size_t i : indices)
                distinct.insert(list[i].linkage_or_die());
            if (distinct.size() > 1)
                for (size_t i : indices)
                    list[i].alike_in_unit = true;
        }
    }
    for (const auto& [name, functions] : by_name) {
        std::map<std::string, const DwarfFunction*> identities;   // one per function
        for (const DwarfFunction& f : functions)
            identities.emplace(f.identity(), &f);
        std::map<std::string, int> per_file, per_line;
        for (const auto& [identity, f] : identities) {
            ++per_file[base_name(f->decl_file)];
            ++per_line[base_name(f->decl_file) + ":" + std::to_string(f->decl_line)];
        }
        for (const DwarfFunction& f : functions) {
            if (identities.size() < 2) {
                label_of_origin.emplace(f.offset, name);
                continue;
            }
            const std::string file = base_name(f.decl_file);
            const std::string line = file + ":" + std::to_string(f.decl_line);
            // One function's several DIEs carry one label: the first DIE's offset.
            char die[32];
            std::snprintf(die, sizeof die, "DIE 0x%llx",
                          static_cast<unsigned long long>(identities.at(f.identity())->offset));
            const std::string tell = !file.empty() && per_file[file] == 1   ? file
                                     : !file.empty() && per_line[line] == 1 ? line
                                                                            : std::string(die);
            label_of_origin.emplace(f.offset, name + " (" + tell + ")");
        }
    }
}

std::string SourceLocator::Impl::label(const llvm::DWARFDie& inlined)
{
    const llvm::DWARFDie origin = inlined.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_abstract_origin);
    if (!origin.isValid())
        return {};
    if (!labels_built)
        build_labels();
    auto known = label_of_origin.find(origin.getOffset());
    return known != label_of_origin.end() ? known->second : describe(origin).name;
}

SourceLocator::SourceLocator(const Image& image) : SourceLocator(image, image.symbols()) {}

SourceLocator::SourceLocator(const Image& image, const SymbolTable& names) : impl_(std::make_unique<Impl>())
{
    // Corrupt unit headers are an error here, a unit's corrupt entries at the first lookup
    // that reads the unit, before LLVM reads them; what LLVM still finds odd after those
    // checks reads as missing information.
    image.check_dwarf_units();
    impl_->image = &image.impl();
    impl_->symbols = &names;
    impl_->dwarf = &dwarf_of(image);
}

SourceLocator::SourceLocator(const ImageSet& images) : impl_(std::make_unique<Impl>())
{
    impl_->symbols = &images.symbols();
    for (const Image& image : images.images())
        impl_->per_image.emplace_back(&image.symbols(), std::make_unique<SourceLocator>(image, images.symbols()));
}

SourceLocator* SourceLocator::image_locator(uint32_t address) const
{
    if (impl_->per_image.empty())
        return nullptr;
    for (const auto& [code, locator] : impl_->per_image)
        if (code->in_code(address))
            return locator.get();
    return impl_->per_image.front().second.get();   // the main image's
}

std::unique_ptr<SourceLocator> SourceLocator::parse(std::string_view image, const std::string& name)
{
    Image parsed = Image::parse(image, name);
    auto locator = std::make_unique<SourceLocator>(parsed);
    locator->impl_->owned.emplace(std::move(parsed));   // its parts stay where they were: behind the pimpl
    return locator;
}

SourceLocator::~SourceLocator() = default;

const std::vector<SourceFrame>& SourceLocator::frames(uint32_t address)
{
    auto cached = cache_.find(address);
    if (cached != cache_.end())
        return cached->second;
    if (SourceLocator* own = image_locator(address))
        return own->frames(address);

    std::vector<SourceFrame> chain;
    impl_->check_unit_of(address);
    const llvm::DILineInfoSpecifier names(FileLineInfoKind::AbsoluteFilePath, llvm::DINameKind::LinkageName);
    const llvm::DIInliningInfo info = impl_->dwarf->getInliningInfoForAddress(
        {address, llvm::object::SectionedAddress::UndefSection}, names);
    // The DIEs of the same chain, innermost first, frame for frame (DWARFContext builds the
    // frames above from this chain): an inlined frame is named by its abstract origin.
    llvm::SmallVector<llvm::DWARFDie, 4> dies;
    if (info.getNumberOfFrames() > 1)
        if (llvm::DWARFCompileUnit* unit = impl_->dwarf->getCompileUnitForCodeAddress(address))
            unit->getInlinedChainForAddress(address, dies);
    for (uint32_t i = 0; i < info.getNumberOfFrames(); ++i) {
        const llvm::DILineInfo& frame = info.getFrame(i);
        SourceFrame out;
        if (frame.FunctionName != llvm::DILineInfo::BadString) {
            out.symbol = frame.FunctionName;
            out.function = demangle(out.symbol);
        }
        if (i + 1 < info.getNumberOfFrames()) {
            if (dies.size() == info.getNumberOfFrames())
                if (std::string label = impl_->label(dies[i]); !label.empty())
                    out.function = std::move(label);
        } else if (const Function* f = impl_->symbols->find(address)) {
            // The function the code belongs to is the symbol's, as every output names it (and
            // as LLVM's symbolizer did): code with a line table but no DIE (assembly) has it too.
            out.function = f->name;
            out.symbol = f->symbol;
        }
        if (frame.FileName != llvm::DILineInfo::BadString && frame.Line != 0) {
            out.file = frame.FileName;
            out.line = frame.Line;
            out.column = frame.Column;
        }
        if (out.function.empty() && out.file.empty())
            continue;
        chain.push_back(std::move(out));
    }
    return cache_.emplace(address, std::move(chain)).first->second;
}

std::string SourceLocator::line_at(uint32_t address)
{
    if (auto cached = cache_.find(address); cached != cache_.end())
        return line_of(cached->second);
    if (SourceLocator* own = image_locator(address))
        return own->line_at(address);
    impl_->check_unit_of(address);
    const llvm::DILineInfo line = impl_->dwarf->getLineInfoForAddress(
        {address, llvm::object::SectionedAddress::UndefSection},
        llvm::DILineInfoSpecifier(FileLineInfoKind::AbsoluteFilePath, llvm::DINameKind::None));
    if (line.FileName == llvm::DILineInfo::BadString || line.Line == 0)
        return {};
    return line.FileName + ":" + std::to_string(line.Line);
}

std::string SourceLocator::line_of(const std::vector<SourceFrame>& frames)
{
    if (frames.empty() || frames.front().file.empty())
        return {};
    return frames.front().file + ":" + std::to_string(frames.front().line);
}

} // namespace mcuprof::core
