#include "mcuprof/image/symbols.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/Error.h>

#include "firmware_object.h"
#include "mcuprof/image/demangle.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"

namespace mcuprof::core {
namespace {

// How strongly a symbol names its address when several share it: a global definition
// wins over a weak alias (the vector table's weak handlers), which wins over a local.
enum class Binding { local = 0, weak = 1, global = 2 };

struct Candidate {
    Function function;
    Binding binding;
};

using ElfFile = llvm::object::ELF32LEFile;
using ElfSection = llvm::object::ELF32LE::Shdr;
using ElfSymbol = llvm::object::ELF32LE::Sym;

std::vector<CodeSection> code_sections_of(const Image& image)
{
    std::vector<CodeSection> code;
    for (const Section& section : image.sections())
        if (section.type == llvm::ELF::SHT_PROGBITS && section.executable() && section.size != 0)
            code.push_back({section.name, section.address, section.size,
                            std::vector<uint8_t>(section.bytes.begin(), section.bytes.end())});
    return code;
}

// Firmware has no dynamic symbols, and they name nothing here; but LLVM's symbolizer reads
// them for every symbol's flags, and drops (leaks) the error of a damaged one.
void check_dynamic_symbols(const ElfFile& file, const ElfSection& section, const std::string& elf_path)
{
    if (auto dynamic = file.symbols(&section); !dynamic)
        throw Error(elf_path, "dynamic symbol table", llvm::toString(dynamic.takeError()));
}

Binding binding_of(const ElfSymbol& symbol)
{
    if (symbol.getBinding() == llvm::ELF::STB_GLOBAL)
        return Binding::global;
    if (symbol.getBinding() == llvm::ELF::STB_WEAK)
        return Binding::weak;
    return Binding::local;
}

// Functions, data objects and untyped symbols defined in the image: the kinds that name an
// address of its code or data.
bool names_defined_address(const ElfSymbol& symbol)
{
    const unsigned type = symbol.getType();
    return symbol.st_shndx != llvm::ELF::SHN_UNDEF &&
           (type == llvm::ELF::STT_FUNC || type == llvm::ELF::STT_OBJECT || type == llvm::ELF::STT_NOTYPE);
}

// One SHT_SYMTAB section: its functions become candidates (locals with the file symbol that
// precedes them), its other symbols data objects.
void read_symbol_table(const ElfFile& file, const ElfSection& section, const std::string& elf_path,
                       std::vector<Candidate>& candidates, std::map<std::string, DataSymbol>& objects)
{
    auto symbols = file.symbols(&section);
    if (!symbols)
        throw Error(elf_path, "symbol table", llvm::toString(symbols.takeError()));
    auto strings = file.getStringTableForSymtab(section);
    if (!strings)
        throw Error(elf_path, "symbol table", llvm::toString(strings.takeError()));
    std::string unit;   // ELF gABI: a file symbol precedes the local symbols of its file
    for (const auto& symbol : *symbols) {
        const unsigned type = symbol.getType();
        if (type == llvm::ELF::STT_FILE) {
            auto name = symbol.getName(*strings);
            unit = name ? name->str() : std::string();
            if (!name)
                llvm::consumeError(name.takeError());
            continue;
        }
        if (!names_defined_address(symbol))
            continue;
        auto name = symbol.getName(*strings);
        if (!name) {
            llvm::consumeError(name.takeError());
            continue;
        }
        if (name->empty())
            continue;
        if (type != llvm::ELF::STT_FUNC) {
            objects.emplace(name->str(), DataSymbol{static_cast<uint32_t>(symbol.st_value),
                                                    static_cast<uint32_t>(symbol.st_size)});
            continue;
        }
        const Binding binding = binding_of(symbol);
        // Bit 0 of a Thumb function's address marks the instruction set, not a byte
        // (ARM ELF ABI, "Symbol Values"): the code starts at the even address.
        const uint32_t start = static_cast<uint32_t>(symbol.st_value) & ~1u;
        Function function{start, static_cast<uint32_t>(symbol.st_size), demangle(name->str()), {}, name->str(),
                          binding == Binding::local ? unit : std::string()};
        candidates.push_back({std::move(function), binding});
    }
}

// One function per start address; the strongest name wins, the rest become aliases.
std::vector<Function> one_function_per_start(std::vector<Candidate>& candidates)
{
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::make_tuple(a.function.start, -static_cast<int>(a.binding), -static_cast<int64_t>(a.function.size),
                               a.function.name) <
               std::make_tuple(b.function.start, -static_cast<int>(b.binding), -static_cast<int64_t>(b.function.size),
                               b.function.name);
    });
    std::vector<Function> functions;
    for (Candidate& c : candidates) {
        if (!functions.empty() && functions.back().start == c.function.start) {
            auto& aliases = functions.back().aliases;
            if (c.function.name != functions.back().name &&
                std::find(aliases.begin(), aliases.end(), c.function.name) == aliases.end())
                aliases.push_back(c.function.name);
            continue;
        }
        functions.push_back(std::move(c.function));
    }
    return functions;
}

} // namespace

SymbolTable SymbolTable::parse(std::string_view image, const std::string& name)
{
    return load(Image::parse(image, name));
}

SymbolTable SymbolTable::load(const Image& image)
{
    const std::string& elf_path = image.path();
    // Its DWARF unit headers too (each unit's own entry with them): every command loads the
    // symbols first, so a damaged unit structure is reported before a command connects to a
    // target or reads its input. The entries inside a unit are checked when a lookup reads it.
    image.check_dwarf_units();

    // The ELFFile interface throughout: every step returns an Expected, where the
    // ObjectFile conveniences (getELFType, getName) abort the process on a damaged section.
    const auto& file = object_of(image).getELFFile();
    auto sections = file.sections();
    if (!sections)
        throw Error(elf_path, "section headers", llvm::toString(sections.takeError()));

    SymbolTable table;
    table.path_ = elf_path;
    table.code_ = code_sections_of(image);
    std::vector<Candidate> candidates;
    for (const auto& section : *sections) {
        if (section.sh_type == llvm::ELF::SHT_DYNSYM)
            check_dynamic_symbols(file, section, elf_path);
        else if (section.sh_type == llvm::ELF::SHT_SYMTAB)
            read_symbol_table(file, section, elf_path, candidates, table.objects_);
    }
    table.functions_ = one_function_per_start(candidates);
    label_functions(table.functions_);
    table.finish();
    return table;
}

void label_functions(std::vector<Function>& functions)
{
    std::map<std::string, std::vector<Function*>> by_name;
    for (Function& f : functions)
        by_name[f.name].push_back(&f);
    for (auto& [name, same] : by_name) {
        if (same.size() < 2)
            continue;
        std::map<std::string, int> per_file;
        for (const Function* f : same)
            ++per_file[f->file];
        for (Function* f : same) {
            char address[16];
            std::snprintf(address, sizeof address, "0x%08x", f->start);
            const bool file_tells = !f->file.empty() && per_file[f->file] == 1;
            f->name = name + " (" + (file_tells ? f->file : std::string(address)) + ")";
        }
    }
}

SymbolTable SymbolTable::merge(const std::vector<std::pair<std::string, const SymbolTable*>>& images, std::string path)
{
    SymbolTable table;
    table.path_ = std::move(path);
    // Code two images both run from one place (RAM code both copy there) is the earlier's.
    auto taken = [&table](uint32_t start, uint64_t end) {
        return std::any_of(table.code_.begin(), table.code_.end(), [&](const CodeSection& c) {
            return start < uint64_t(c.start) + c.size && c.start < end;
        });
    };
    std::vector<std::pair<size_t, Function>> kept;   // (image, function)
    for (size_t i = 0; i < images.size(); ++i) {
        const SymbolTable& symbols = *images[i].second;
        for (const Function& f : symbols.functions_)
            if (!taken(f.start, uint64_t(f.start) + std::max<uint32_t>(f.size, 1)))
                kept.emplace_back(i, f);
        for (const CodeSection& c : symbols.code_)
            if (!taken(c.start, uint64_t(c.start) + c.size))
                table.code_.push_back(c);
        table.objects_.insert(symbols.objects_.begin(), symbols.objects_.end());   // the first image's stay
    }
    std::map<std::string, std::set<size_t>> images_naming;   // the images with a function of that name
    for (const auto& [image, f] : kept)
        images_naming[f.name].insert(image);
    for (auto& [image, f] : kept) {
        if (images_naming[f.name].size() > 1)
            f.name += " (" + std::filesystem::path(images[image].first).filename().string() + ")";
        table.functions_.push_back(std::move(f));
    }
    std::sort(table.functions_.begin(), table.functions_.end(),
              [](const Function& a, const Function& b) { return a.start < b.start; });
    std::sort(table.code_.begin(), table.code_.end(),
              [](const CodeSection& a, const CodeSection& b) { return a.start < b.start; });
    return table;   // each image's sizes are settled already (finish)
}

SymbolTable SymbolTable::from(std::vector<Function> functions, std::vector<CodeSection> code)
{
    SymbolTable table;
    table.functions_ = std::move(functions);
    table.code_ = std::move(code);
    std::sort(table.functions_.begin(), table.functions_.end(),
              [](const Function& a, const Function& b) { return a.start < b.start; });
    table.finish();
    return table;
}

void SymbolTable::finish()
{
    // A function symbol of size 0 (hand-written assembly without .size) owns the bytes up
    // to the next function or the end of its section, so its samples are not lost.
    for (size_t i = 0; i < functions_.size(); ++i) {
        Function& f = functions_[i];
        if (f.size != 0)
            continue;
        uint64_t end = f.start;
        for (const CodeSection& s : code_)
            if (f.start >= s.start && f.start < uint64_t(s.start) + s.size)
                end = uint64_t(s.start) + s.size;
        if (i + 1 < functions_.size())
            end = std::min<uint64_t>(end, functions_[i + 1].start);
        f.size = static_cast<uint32_t>(end - f.start);
    }
}

const Function* SymbolTable::find(uint32_t address) const
{
    auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                               [](uint32_t a, const Function& f) { return a < f.start; });
    if (it == functions_.begin())
        return nullptr;
    --it;
    if (uint64_t(address) < uint64_t(it->start) + it->size)
        return &*it;
    return nullptr;
}

std::optional<DataSymbol> SymbolTable::find_object(const std::string& name) const
{
    auto it = objects_.find(name);
    if (it == objects_.end())
        return std::nullopt;
    return it->second;
}

std::optional<uint16_t> SymbolTable::halfword(uint32_t address) const
{
    for (const CodeSection& s : code_)
        if (address >= s.start && uint64_t(address) + 2 <= uint64_t(s.start) + s.bytes.size()) {
            const size_t at = address - s.start;
            return static_cast<uint16_t>(s.bytes[at] | s.bytes[at + 1] << 8);
        }
    return std::nullopt;
}

bool SymbolTable::in_code(uint32_t address) const
{
    for (const CodeSection& s : code_)
        if (address >= s.start && uint64_t(address) < uint64_t(s.start) + s.size)
            return true;
    return false;
}

} // namespace mcuprof::core
