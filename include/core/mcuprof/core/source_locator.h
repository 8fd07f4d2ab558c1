#pragma once
// Source lines and inline chains of code addresses, from the ELF's DWARF through LLVM's
// Symbolize library. Every distinct address is looked up once and remembered.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mcuprof::core {

struct SourceFrame {
    std::string function;   // as DWARF names it; empty when unknown
    std::string file;       // empty when there is no line information
    uint32_t line = 0;
    uint32_t column = 0;
};

class SourceLocator {
public:
    explicit SourceLocator(std::string elf_path);
    ~SourceLocator();
    SourceLocator(const SourceLocator&) = delete;
    SourceLocator& operator=(const SourceLocator&) = delete;

    // The inline chain at an address: the innermost (inlined) function first, the
    // function the code physically belongs to last. Empty without debug information.
    const std::vector<SourceFrame>& frames(uint32_t address);

    // "file:line" of the innermost frame, or empty.
    static std::string line_of(const std::vector<SourceFrame>& frames);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::unordered_map<uint32_t, std::vector<SourceFrame>> cache_;
};

} // namespace mcuprof::core
