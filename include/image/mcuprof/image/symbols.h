#pragma once
// Functions of a firmware image, read from the ELF symbol table with LLVM Object.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::core {

class Image;

struct Function {
    uint32_t start = 0;                 // Thumb bit cleared
    uint32_t size = 0;
    std::string name;                   // demangled as c++filt shows it, unique in the table
    std::vector<std::string> aliases;   // other symbols at the same start (weak aliases)
    std::string symbol;                 // the symbol as the ELF spells it (mangled)
    std::string file;                   // a local symbol's source file (the STT_FILE before it)
};

// The label every output gives a function: its demangled name, unique among `functions`
// (sorted by start): where two or more functions share a name (statics of two translation
// units, say) each is told apart by its file, " (unit_a.cpp)", or, where that does not
// tell them apart either, by its address, " (0x08000123)".
void label_functions(std::vector<Function>& functions);

// A data object or linker symbol (STT_OBJECT, STT_NOTYPE): what a reader of target
// memory needs to find a variable.
struct DataSymbol {
    uint32_t address = 0;
    uint32_t size = 0;
};

struct CodeSection {
    std::string name;
    uint32_t start = 0;
    uint32_t size = 0;
    std::vector<uint8_t> bytes;         // the section's contents; empty when not read
};

class SymbolTable {
public:
    // Reads STT_FUNC symbols (local and global) of the image, and the executable sections.
    // Throws core::Error. Image::symbols() keeps the one of each image,
    // ImageSet::symbols() the merged one a command uses.
    static SymbolTable load(const Image& image);
    // The same from an image in memory; `name` stands for the file in errors.
    static SymbolTable parse(std::string_view image, const std::string& name);
    // The functions, code and data symbols of several images of one target together (the
    // images' (path, table), the first the image given first): a name two images share is
    // told apart by the image's file name, "main (boot.elf)", on both; a data symbol both
    // define is the first image's. `path` names the whole in messages.
    static SymbolTable merge(const std::vector<std::pair<std::string, const SymbolTable*>>& images, std::string path);
    // For tests and sources that know their functions already.
    static SymbolTable from(std::vector<Function> functions, std::vector<CodeSection> code = {});

    // The function whose [start, start + size) holds the address, or nullptr.
    const Function* find(uint32_t address) const;
    // Inside an executable section of the image.
    bool in_code(uint32_t address) const;
    // The 16-bit little-endian code halfword at the address (a Thumb instruction or half
    // of one), when a code section holds it with its contents.
    std::optional<uint16_t> halfword(uint32_t address) const;
    // A global or local data symbol by name.
    std::optional<DataSymbol> find_object(const std::string& name) const;
    // Whether the symbol table has any data symbol (a stripped one has none).
    bool has_objects() const { return !objects_.empty(); }

    const std::vector<Function>& functions() const { return functions_; }
    const std::vector<CodeSection>& code_sections() const { return code_; }
    const std::string& path() const { return path_; }

private:
    void finish();

    std::string path_;
    std::vector<Function> functions_;   // sorted by start, one per start address
    std::vector<CodeSection> code_;
    std::map<std::string, DataSymbol> objects_;
};

} // namespace mcuprof::core
