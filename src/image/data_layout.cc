#include "mcuprof/image/data_layout.h"

#include <map>
#include <set>

#include <llvm/ADT/StringExtras.h>
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDie.h>
#include <llvm/DebugInfo/DWARF/DWARFUnit.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/LEB128.h>

#include "firmware_object.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"

namespace mcuprof::core {

const TypeLayout::Member* TypeLayout::member(std::string_view wanted) const
{
    for (const Member& m : members)
        if (m.name == wanted)
            return &m;
    return nullptr;
}

namespace {

using llvm::DWARFDie;
namespace dw = llvm::dwarf;

std::string name_of(const DWARFDie& die)
{
    const char* name = die.getName(llvm::DINameKind::ShortName);
    return name != nullptr ? name : "";
}

std::optional<uint64_t> constant(const DWARFDie& die, dw::Attribute attribute)
{
    if (auto value = die.find(attribute))
        if (auto number = value->getAsUnsignedConstant())
            return *number;
    return std::nullopt;
}

bool is_declaration(const DWARFDie& die)
{
    return constant(die, dw::DW_AT_declaration).value_or(0) != 0;
}

// The address of a variable whose location is the single operation DW_OP_addr (DWARF 5
// section 2.5.1.1): a global or a function's static. Locals on the stack or in registers
// have other expressions and are not data a reader of target memory can find.
std::optional<uint32_t> fixed_address(const DWARFDie& die)
{
    auto location = die.find(dw::DW_AT_location);
    if (!location)
        return std::nullopt;
    auto block = location->getAsBlock();
    if (!block || block->size() != 5 || (*block)[0] != dw::DW_OP_addr)
        return std::nullopt;
    const auto& b = *block;
    return static_cast<uint32_t>(b[1] | (b[2] << 8) | (b[3] << 16) | (static_cast<uint32_t>(b[4]) << 24));
}

// DW_AT_data_member_location: a constant in DWARF 3 and later, an expression
// "DW_OP_plus_uconst N" in DWARF 2; bit fields may carry DW_AT_data_bit_offset instead.
uint64_t member_offset(const DWARFDie& die)
{
    if (auto location = die.find(dw::DW_AT_data_member_location)) {
        if (auto number = location->getAsUnsignedConstant())
            return *number;
        if (auto block = location->getAsBlock(); block && block->size() >= 2 && (*block)[0] == dw::DW_OP_plus_uconst)
            return llvm::decodeULEB128(block->data() + 1);
    }
    return constant(die, dw::DW_AT_data_bit_offset).value_or(0) / 8;
}

// The key a structure, union or enumeration is indexed under: "struct tag".
std::string tagged_name(const DWARFDie& die)
{
    std::string name = name_of(die);
    if (name.empty())
        name = "<anonymous>";
    switch (die.getTag()) {
    case dw::DW_TAG_structure_type:
    case dw::DW_TAG_class_type: return "struct " + name;
    case dw::DW_TAG_union_type: return "union " + name;
    case dw::DW_TAG_enumeration_type: return "enum " + name;
    default: return name;
    }
}

// A base type (DW_TAG_base_type): its name, size and what its encoding says of its values.
std::shared_ptr<const TypeLayout> base_type_layout(const DWARFDie& die)
{
    auto base = std::make_shared<TypeLayout>();
    base->kind = TypeLayout::Kind::base;
    base->name = name_of(die);
    base->size = constant(die, dw::DW_AT_byte_size).value_or(0);
    const uint64_t encoding = constant(die, dw::DW_AT_encoding).value_or(0);
    base->is_signed = encoding == dw::DW_ATE_signed || encoding == dw::DW_ATE_signed_char;
    base->is_float = encoding == dw::DW_ATE_float || encoding == dw::DW_ATE_complex_float ||
                     encoding == dw::DW_ATE_decimal_float;
    return base;
}

// An enumeration: its enumerators with a constant value, signed when one is negative.
std::shared_ptr<const TypeLayout> enumeration_layout(const DWARFDie& die)
{
    auto enumeration = std::make_shared<TypeLayout>();
    enumeration->kind = TypeLayout::Kind::enumeration;
    enumeration->name = tagged_name(die);
    enumeration->size = constant(die, dw::DW_AT_byte_size).value_or(0);
    for (const DWARFDie& child : die.children()) {
        if (child.getTag() != dw::DW_TAG_enumerator)
            continue;
        const auto value = child.find(dw::DW_AT_const_value);
        const auto number = value ? value->getAsSignedConstant() : std::nullopt;
        if (!number)
            continue;
        enumeration->enumerators.emplace_back(*number, name_of(child));
        enumeration->is_signed = enumeration->is_signed || *number < 0;
    }
    return enumeration;
}

// Any other type: a name (the tag's when it has none) and a size, nothing inside.
std::shared_ptr<const TypeLayout> other_type_layout(const DWARFDie& die)
{
    auto other = std::make_shared<TypeLayout>();
    other->name = name_of(die).empty() ? std::string(dw::TagString(die.getTag())) : name_of(die);
    other->size = constant(die, dw::DW_AT_byte_size).value_or(0);
    return other;
}

} // namespace

struct DataLayout::Impl {
    std::string path;
    std::optional<Image> owned;   // parse(): the image this layout was given in memory
    llvm::DWARFContext* dwarf = nullptr;   // the image's (dwarf_of)

    struct Variable {
        DWARFDie die;
        uint32_t address = 0;
        bool external = false;
    };
    std::map<std::string, Variable, std::less<>> variables;
    std::map<std::string, DWARFDie, std::less<>> types;   // "struct x", "union x", typedef and base names
    std::map<std::string, std::string, std::less<>> tags; // bare tag "x" -> "struct x"

    // Layouts built so far, by DIE offset; types being laid out, to stop at cycles.
    mutable std::map<uint64_t, std::shared_ptr<const TypeLayout>> built;
    mutable std::set<uint64_t> in_progress;

    void index(const DWARFDie& die);
    std::shared_ptr<const TypeLayout> layout(const DWARFDie& die) const;
    std::shared_ptr<const TypeLayout> layout_of_type_attribute(const DWARFDie& die) const;
    std::shared_ptr<const TypeLayout> aggregate(const DWARFDie& die, TypeLayout::Kind kind) const;
    std::shared_ptr<const TypeLayout> array(const DWARFDie& die) const;
};

void DataLayout::Impl::index(const DWARFDie& die)
{
    switch (die.getTag()) {
    case dw::DW_TAG_variable: {
        auto address = fixed_address(die);
        std::string name = name_of(die);
        if (!address || name.empty())
            return;
        const bool external = constant(die, dw::DW_AT_external).value_or(0) != 0 ||
                              die.getAttributeValueAsReferencedDie(dw::DW_AT_specification).isValid();
        auto found = variables.find(name);
        if (found == variables.end() || (external && !found->second.external))
            variables[name] = Variable{die, *address, external};
        return;
    }
    case dw::DW_TAG_structure_type:
    case dw::DW_TAG_class_type:
    case dw::DW_TAG_union_type:
    case dw::DW_TAG_enumeration_type: {
        if (name_of(die).empty())
            return;
        const std::string key = tagged_name(die);
        auto found = types.find(key);
        if (found == types.end() || (is_declaration(found->second) && !is_declaration(die)))
            types[key] = die;
        tags.emplace(name_of(die), key);
        return;
    }
    case dw::DW_TAG_typedef:
    case dw::DW_TAG_base_type: {
        std::string name = name_of(die);
        if (!name.empty())
            types.emplace(name, die);
        return;
    }
    default: return;
    }
}

std::shared_ptr<const TypeLayout> DataLayout::Impl::layout_of_type_attribute(const DWARFDie& die) const
{
    DWARFDie type = die.getAttributeValueAsReferencedDie(dw::DW_AT_type);
    if (!type.isValid()) {
        // A definition that completes a declaration (DW_AT_specification) may leave the
        // type on the declaration.
        DWARFDie declaration = die.getAttributeValueAsReferencedDie(dw::DW_AT_specification);
        if (declaration.isValid())
            type = declaration.getAttributeValueAsReferencedDie(dw::DW_AT_type);
    }
    return type.isValid() ? layout(type) : nullptr;
}

std::shared_ptr<const TypeLayout> DataLayout::Impl::layout(const DWARFDie& die) const
{
    const uint64_t offset = die.getOffset();
    if (auto found = built.find(offset); found != built.end())
        return found->second;
    if (die.getTag() == dw::DW_TAG_structure_type || die.getTag() == dw::DW_TAG_class_type)
        return aggregate(die, TypeLayout::Kind::structure);
    if (die.getTag() == dw::DW_TAG_union_type)
        return aggregate(die, TypeLayout::Kind::union_);
    // Other types refer to others only through DW_AT_type; a chain of them that comes back to
    // itself (a pointer to itself, a typedef of itself: corrupt DWARF, never a compiler's)
    // ends at a nameless stub instead of recursing until the stack runs out.
    if (!in_progress.insert(offset).second) {
        auto cycle = std::make_shared<TypeLayout>();
        cycle->name = "(cyclic type at DIE 0x" + llvm::utohexstr(offset) + ")";
        return cycle;
    }

    std::shared_ptr<const TypeLayout> result;
    switch (die.getTag()) {
    case dw::DW_TAG_const_type:
    case dw::DW_TAG_volatile_type:
    case dw::DW_TAG_restrict_type:
    case dw::DW_TAG_atomic_type:
        // Qualifiers change how the compiler may access the object, not its layout.
        result = layout_of_type_attribute(die);
        break;
    case dw::DW_TAG_typedef: {
        auto named = layout_of_type_attribute(die);
        auto copy = std::make_shared<TypeLayout>(named ? *named : TypeLayout{});
        copy->name = name_of(die);
        result = copy;
        break;
    }
    case dw::DW_TAG_base_type: result = base_type_layout(die); break;
    case dw::DW_TAG_enumeration_type: result = enumeration_layout(die); break;
    case dw::DW_TAG_pointer_type:
    case dw::DW_TAG_reference_type: {
        auto pointer = std::make_shared<TypeLayout>();
        pointer->kind = TypeLayout::Kind::pointer;
        pointer->size = constant(die, dw::DW_AT_byte_size).value_or(die.getDwarfUnit()->getAddressByteSize());
        pointer->element = layout_of_type_attribute(die);
        pointer->name = (pointer->element ? pointer->element->name : std::string("void")) + "*";
        result = pointer;
        break;
    }
    case dw::DW_TAG_array_type: result = array(die); break;
    default: result = other_type_layout(die); break;
    }
    in_progress.erase(offset);
    built[offset] = result;
    return result;
}

std::shared_ptr<const TypeLayout> DataLayout::Impl::aggregate(const DWARFDie& die, TypeLayout::Kind kind) const
{
    const uint64_t offset = die.getOffset();
    // A pointer to an incomplete struct in one unit: the definition usually sits in another.
    if (is_declaration(die)) {
        auto definition = types.find(tagged_name(die));
        if (definition != types.end() && !is_declaration(definition->second))
            return layout(definition->second);
    }
    auto result = std::make_shared<TypeLayout>();
    result->kind = kind;
    result->name = tagged_name(die);
    result->size = constant(die, dw::DW_AT_byte_size).value_or(0);
    if (!in_progress.insert(offset).second)
        return result;   // a pointer back into this structure: the stub (see the header)

    for (const DWARFDie& child : die.children()) {
        if (child.getTag() != dw::DW_TAG_member)
            continue;
        result->members.push_back({name_of(child), member_offset(child), layout_of_type_attribute(child)});
    }
    in_progress.erase(offset);
    built[offset] = result;
    return result;
}

std::shared_ptr<const TypeLayout> DataLayout::Impl::array(const DWARFDie& die) const
{
    // One DW_TAG_subrange_type child per dimension, outermost first (DWARF 5 section 5.13).
    std::vector<uint64_t> counts;
    for (const DWARFDie& child : die.children()) {
        if (child.getTag() != dw::DW_TAG_subrange_type)
            continue;
        if (auto count = constant(child, dw::DW_AT_count))
            counts.push_back(*count);
        else if (auto upper = constant(child, dw::DW_AT_upper_bound))
            counts.push_back(*upper + 1 - constant(child, dw::DW_AT_lower_bound).value_or(0));
        else
            counts.push_back(0);   // a flexible array member or an extern array of unknown size
    }
    if (counts.empty())
        counts.push_back(0);

    std::shared_ptr<const TypeLayout> element = layout_of_type_attribute(die);
    const std::string element_name = element ? element->name : std::string("void");
    std::string suffix;
    for (size_t i = counts.size(); i-- > 0;) {
        auto level = std::make_shared<TypeLayout>();
        level->kind = TypeLayout::Kind::array;
        level->count = counts[i];
        level->element = element;
        level->size = counts[i] * (element ? element->size : 0);
        suffix = "[" + std::to_string(counts[i]) + "]" + suffix;
        level->name = element_name + suffix;
        element = level;
    }
    auto outer = std::make_shared<TypeLayout>(*element);
    if (auto size = constant(die, dw::DW_AT_byte_size))
        outer->size = *size;
    return outer;
}

DataLayout DataLayout::parse(std::string_view image, const std::string& name)
{
    Image parsed = Image::parse(image, name);
    DataLayout layout(parsed);
    layout.impl_->owned.emplace(std::move(parsed));   // the object stays where it was: behind the pimpl
    return layout;
}

DataLayout::DataLayout(const Image& image) : impl_(std::make_unique<Impl>())
{
    const std::string& elf_path = image.path();
    impl_->path = elf_path;
    image.check_dwarf();   // before LLVM reads a single entry
    // A damaged .debug_info must not end the process: the first problem LLVM met is
    // reported if no unit could be read at all.
    impl_->dwarf = &dwarf_of(image);
    for (const auto& unit : impl_->dwarf->compile_units())
        for (const llvm::DWARFDebugInfoEntry& entry : unit->dies())
            impl_->index(DWARFDie(unit.get(), &entry));
    if (impl_->dwarf->getNumCompileUnits() == 0) {
        const std::string& problem = first_dwarf_problem(image);
        throw Error(elf_path, ".debug_info",
                    problem.empty() ? "no DWARF debug information (build the firmware with -g)" : problem);
    }
}

DataLayout::~DataLayout() = default;
DataLayout::DataLayout(DataLayout&&) noexcept = default;
DataLayout& DataLayout::operator=(DataLayout&&) noexcept = default;

const std::string& DataLayout::path() const { return impl_->path; }

std::optional<VariableLayout> DataLayout::variable(std::string_view name) const
{
    auto found = impl_->variables.find(name);
    if (found == impl_->variables.end())
        return std::nullopt;
    return VariableLayout{found->first, found->second.address, impl_->layout_of_type_attribute(found->second.die)};
}

std::shared_ptr<const TypeLayout> DataLayout::complete(std::shared_ptr<const TypeLayout> type) const
{
    if (type && type->members.empty() && !type->name.empty() &&
        (type->kind == TypeLayout::Kind::structure || type->kind == TypeLayout::Kind::union_))
        if (auto full = this->type(type->name))
            return full;
    return type;
}

namespace {

// The leading identifier of a path ("_kernel" of "_kernel.cpus[0]"), cut off the front.
std::string_view take_identifier(std::string_view& path)
{
    size_t end = 0;
    while (end < path.size() && path[end] != '.' && path[end] != '[')
        ++end;
    std::string_view name = path.substr(0, end);
    path.remove_prefix(end);
    return name;
}

// "[N]" cut off the front; nothing when the path does not start with a whole index.
std::optional<uint64_t> take_index(std::string_view& path)
{
    const size_t close = path.find(']');
    if (path.empty() || path[0] != '[' || close == std::string_view::npos || close == 1)
        return std::nullopt;
    uint64_t index = 0;
    for (char c : path.substr(1, close - 1)) {
        if (c < '0' || c > '9')
            return std::nullopt;
        index = index * 10 + uint64_t(c - '0');
    }
    path.remove_prefix(close + 1);
    return index;
}

} // namespace

std::optional<FieldLayout> DataLayout::field(const TypeLayout& type, std::string_view path) const
{
    FieldLayout at{0, nullptr};
    const TypeLayout* current = &type;
    std::shared_ptr<const TypeLayout> holder;   // keeps a completed stub alive
    bool first = true;
    while (!path.empty()) {
        if (path[0] == '[') {
            // An element: the array's element size times the index (DWARF 5 section 5.13),
            // within the array's length when DWARF gives one.
            auto index = take_index(path);
            if (!index || current->kind != TypeLayout::Kind::array || !current->element ||
                (current->count != 0 && *index >= current->count))
                return std::nullopt;
            at.offset += *index * current->element->size;
            holder = complete(current->element);
        } else {
            if (path[0] == '.')
                path.remove_prefix(1);
            else if (!first)
                return std::nullopt;
            const std::string_view name = take_identifier(path);
            const TypeLayout::Member* member = name.empty() ? nullptr : current->member(name);
            if (member == nullptr || !member->type)
                return std::nullopt;
            at.offset += member->offset;
            holder = complete(member->type);
        }
        first = false;
        current = holder.get();
        at.type = holder;
    }
    return at.type ? std::optional<FieldLayout>(at) : std::nullopt;
}

std::optional<VariableLayout> DataLayout::object(std::string_view path) const
{
    std::string_view rest = path;
    const std::string_view name = take_identifier(rest);
    auto object = variable(name);
    if (!object || rest.empty())
        return object;
    if (!object->type)
        return std::nullopt;
    auto inside = field(*complete(object->type), rest);
    if (!inside)
        return std::nullopt;
    return VariableLayout{std::string(path), object->address + uint32_t(inside->offset), inside->type};
}

std::shared_ptr<const TypeLayout> DataLayout::type(std::string_view name) const
{
    auto found = impl_->types.find(name);
    if (found == impl_->types.end()) {
        auto tag = impl_->tags.find(name);
        if (tag == impl_->tags.end())
            return nullptr;
        found = impl_->types.find(tag->second);
    }
    return impl_->layout(found->second);
}

} // namespace mcuprof::core
