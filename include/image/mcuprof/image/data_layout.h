#pragma once
// The layout of a firmware's data, read from its DWARF (.debug_info) with LLVM's DWARF
// library: where a global or static variable lives and what its type looks like (members and
// their offsets, array lengths, pointer targets), so a reader of target memory can find a
// field such as pxCurrentTCB->pcTaskName without knowing the firmware's headers.
//
// Typedefs keep their own name but take the kind, size and members of the type they name;
// const and volatile are looked through (DWARF 5 section 5.3, type modifiers).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcuprof::core {

class Image;

struct TypeLayout {
    enum class Kind { base, pointer, structure, union_, array, enumeration, other };
    Kind kind = Kind::other;
    std::string name;          // "struct tskTaskControlBlock", "uint32_t", "char[16]" ...
    uint64_t size = 0;         // bytes
    struct Member {
        std::string name;
        uint64_t offset = 0;   // bytes from the start of the structure
        std::shared_ptr<const TypeLayout> type;
    };
    std::vector<Member> members;                 // structure / union
    // Array element, or pointer target (nullptr for void*). A pointer back into a structure
    // that is still being laid out (a list item's pxNext) points to a stub of that structure:
    // its name, kind and size, no members; DataLayout::type(name) gives the full one.
    std::shared_ptr<const TypeLayout> element;
    uint64_t count = 0;                          // array elements (0 if unknown)
    // Base types and enumerations: whether the value is signed (DW_ATE_signed and
    // DW_ATE_signed_char; an enumeration with a negative enumerator), and an enumeration's
    // enumerators (DW_TAG_enumerator: name, DW_AT_const_value), in the DWARF's order.
    bool is_signed = false;
    bool is_float = false;   // DW_ATE_float, complex_float, decimal_float
    std::vector<std::pair<int64_t, std::string>> enumerators;

    const Member* member(std::string_view name) const;   // nullptr if absent
};

struct VariableLayout {
    std::string name;
    uint32_t address = 0;
    std::shared_ptr<const TypeLayout> type;
};

// A place inside a structure or array: its offset from the start and its type.
struct FieldLayout {
    uint64_t offset = 0;
    std::shared_ptr<const TypeLayout> type;
};

class DataLayout {
public:
    // Reads the image's DWARF (checked first: Image::check_dwarf) through its DWARF context;
    // throws core::Error naming the file when it cannot be read or has no debug information.
    // The image must outlive the layout; Image::data_layout() keeps the one a command uses.
    explicit DataLayout(const Image& image);
    // The same from an image in memory (copied, and kept); `name` stands for the file in errors.
    static DataLayout parse(std::string_view image, const std::string& name);
    ~DataLayout();
    DataLayout(DataLayout&&) noexcept;
    DataLayout& operator=(DataLayout&&) noexcept;

    // A global or static variable at a fixed address (DW_OP_addr), by name; a global wins
    // over a function's static of the same name.
    std::optional<VariableLayout> variable(std::string_view name) const;
    // An object inside a variable, named by a member path as C writes it: members and array
    // elements, no pointers followed ("_kernel.cpus[0].current"); its address and type.
    // Nothing when the variable, a member or an element is absent.
    std::optional<VariableLayout> object(std::string_view path) const;
    // A member path inside a type ("name", "base.thread_state", "cpus[0]"): its offset from
    // the type's start and its type; nothing when a step is absent.
    std::optional<FieldLayout> field(const TypeLayout& type, std::string_view path) const;
    // The full layout of a stub structure (see TypeLayout::element), else the type itself.
    std::shared_ptr<const TypeLayout> complete(std::shared_ptr<const TypeLayout> type) const;

    // A type by name: "struct tskTaskControlBlock", "TCB_t", "uint32_t"; a bare tag name
    // ("tskTaskControlBlock") finds the struct, union or enum when no typedef has that name.
    std::shared_ptr<const TypeLayout> type(std::string_view name) const;

    const std::string& path() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcuprof::core
