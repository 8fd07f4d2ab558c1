#pragma once
// Source lines and inline chains of code addresses, from the ELF's DWARF through LLVM's
// Symbolize library. Every distinct address is looked up once and remembered.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llvm {
class MemoryBuffer;
}

namespace mcuprof::core {

struct SourceFrame {
    std::string function;   // as DWARF names it, demangled (demangle.h); empty when unknown
    std::string file;       // empty when there is no line information
    uint32_t line = 0;
    uint32_t column = 0;
    std::string symbol;     // the name DWARF gives (the linkage name, mangled, where it has one)
};

class SourceLocator {
public:
    // Reads the ELF now and checks its DWARF debugging entries (dwarf_check.h): corrupt ones
    // throw core::Error; a file that cannot be read gives empty chains.
    explicit SourceLocator(std::string elf_path);
    // The same from an image in memory (copied); `name` stands for the file in errors.
    static std::unique_ptr<SourceLocator> parse(std::string_view image, const std::string& name);
    ~SourceLocator();
    SourceLocator(const SourceLocator&) = delete;
    SourceLocator& operator=(const SourceLocator&) = delete;

    // The inline chain at an address: the innermost (inlined) function first, the
    // function the code physically belongs to last. Empty without debug information.
    const std::vector<SourceFrame>& frames(uint32_t address);

    // "file:line" of the innermost frame, or empty.
    static std::string line_of(const std::vector<SourceFrame>& frames);

private:
    SourceLocator(std::unique_ptr<llvm::MemoryBuffer> image, const std::string& name);
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::unordered_map<uint32_t, std::vector<SourceFrame>> cache_;
};

} // namespace mcuprof::core
