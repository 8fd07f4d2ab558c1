#include "mcuprof/core/symbols.h"

#include <algorithm>
#include <tuple>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "mcuprof/core/dwarf_check.h"
#include "mcuprof/core/error.h"

namespace mcuprof::core {
namespace {

// How strongly a symbol names its address when several share it: a global definition
// wins over a weak alias (the vector table's weak handlers), which wins over a local.
enum class Binding { local = 0, weak = 1, global = 2 };

struct Candidate {
    Function function;
    Binding binding;
};

std::string message_of(llvm::Error error)
{
    return llvm::toString(std::move(error));
}

} // namespace

SymbolTable SymbolTable::load(const std::string& elf_path)
{
    auto buffer = llvm::MemoryBuffer::getFile(elf_path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer)
        throw Error(elf_path, "", "cannot read ELF: " + buffer.getError().message());
    return parse(std::string_view((*buffer)->getBufferStart(), (*buffer)->getBufferSize()), elf_path);
}

SymbolTable SymbolTable::parse(std::string_view image, const std::string& elf_path)
{
    // ELF's identification bytes (System V ABI, e_ident[EI_MAG0..3]): without them LLVM
    // guesses another format and its words name that one's problem.
    if (!image.starts_with("\x7f" "ELF"))
        throw Error(elf_path, "offset 0",
                    "not an ELF file (no 0x7f 'ELF' at its start): a raw .bin or .hex image? give the .elf the "
                    "linker wrote");
    auto binary = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(llvm::StringRef(image.data(), image.size()), elf_path));
    if (!binary)
        throw Error(elf_path, "", "cannot read ELF: " + message_of(binary.takeError()));
    auto* elf = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(binary->get());
    if (elf == nullptr)
        throw Error(elf_path, "ELF header", "not a 32-bit little-endian ELF (Cortex-M firmware is ELF32 ARM)");
    const unsigned machine = elf->getELFFile().getHeader().e_machine;
    if (machine != llvm::ELF::EM_ARM)
        throw Error(elf_path, "ELF header", "ELF machine is " + std::to_string(machine) + ", not ARM (40)");
    // Its debugging entries too: every command loads the symbols first, so corrupt DWARF is
    // reported before a command connects to a target or reads its input.
    check_debug_entries(*elf, elf_path);

    // The ELFFile interface throughout: every step returns an Expected, where the
    // ObjectFile conveniences (getELFType, getName) abort the process on a damaged section.
    const auto& file = elf->getELFFile();
    auto sections = file.sections();
    if (!sections)
        throw Error(elf_path, "section headers", message_of(sections.takeError()));

    SymbolTable table;
    table.path_ = elf_path;
    std::vector<Candidate> candidates;
    for (const auto& section : *sections) {
        if (section.sh_type == llvm::ELF::SHT_PROGBITS && (section.sh_flags & llvm::ELF::SHF_EXECINSTR) != 0 &&
            section.sh_size != 0) {
            auto name = file.getSectionName(section);
            table.code_.push_back({name ? name->str() : std::string("?"), static_cast<uint32_t>(section.sh_addr),
                                   static_cast<uint32_t>(section.sh_size), {}});
            if (!name)
                llvm::consumeError(name.takeError());
            if (auto contents = file.getSectionContents(section))
                table.code_.back().bytes.assign(contents->begin(), contents->end());
            else
                llvm::consumeError(contents.takeError());   // a damaged section: no bytes, still its range
        }
        if (section.sh_type == llvm::ELF::SHT_DYNSYM) {
            // Firmware has no dynamic symbols, and they name nothing here; but LLVM's symbolizer
            // reads them for every symbol's flags, and drops (leaks) the error of a damaged one.
            if (auto dynamic = file.symbols(&section); !dynamic)
                throw Error(elf_path, "dynamic symbol table", message_of(dynamic.takeError()));
            continue;
        }
        if (section.sh_type != llvm::ELF::SHT_SYMTAB)
            continue;
        auto symbols = file.symbols(&section);
        if (!symbols)
            throw Error(elf_path, "symbol table", message_of(symbols.takeError()));
        auto strings = file.getStringTableForSymtab(section);
        if (!strings)
            throw Error(elf_path, "symbol table", message_of(strings.takeError()));
        for (const auto& symbol : *symbols) {
            const unsigned type = symbol.getType();
            if (symbol.st_shndx == llvm::ELF::SHN_UNDEF ||
                (type != llvm::ELF::STT_FUNC && type != llvm::ELF::STT_OBJECT && type != llvm::ELF::STT_NOTYPE))
                continue;
            auto name = symbol.getName(*strings);
            if (!name) {
                llvm::consumeError(name.takeError());
                continue;
            }
            if (name->empty())
                continue;
            if (type != llvm::ELF::STT_FUNC) {
                table.objects_.emplace(name->str(), DataSymbol{static_cast<uint32_t>(symbol.st_value),
                                                               static_cast<uint32_t>(symbol.st_size)});
                continue;
            }
            Binding binding = Binding::local;
            if (symbol.getBinding() == llvm::ELF::STB_GLOBAL)
                binding = Binding::global;
            else if (symbol.getBinding() == llvm::ELF::STB_WEAK)
                binding = Binding::weak;
            // Bit 0 of a Thumb function's address marks the instruction set, not a byte
            // (ARM ELF ABI, "Symbol Values"): the code starts at the even address.
            const uint32_t start = static_cast<uint32_t>(symbol.st_value) & ~1u;
            candidates.push_back({Function{start, static_cast<uint32_t>(symbol.st_size), name->str(), {}}, binding});
        }
    }

    // One function per start address; the strongest name wins, the rest become aliases.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::make_tuple(a.function.start, -static_cast<int>(a.binding), -static_cast<int64_t>(a.function.size),
                               a.function.name) <
               std::make_tuple(b.function.start, -static_cast<int>(b.binding), -static_cast<int64_t>(b.function.size),
                               b.function.name);
    });
    for (Candidate& c : candidates) {
        if (!table.functions_.empty() && table.functions_.back().start == c.function.start) {
            auto& aliases = table.functions_.back().aliases;
            if (c.function.name != table.functions_.back().name &&
                std::find(aliases.begin(), aliases.end(), c.function.name) == aliases.end())
                aliases.push_back(c.function.name);
            continue;
        }
        table.functions_.push_back(std::move(c.function));
    }
    table.finish();
    return table;
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
