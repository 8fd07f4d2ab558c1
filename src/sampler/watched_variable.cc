#include "mcuprof/sampler/watched_variable.h"

#include "mcuprof/image/data_layout.h"
#include "mcuprof/error.h"

namespace mcuprof::sources {

void WatchedVariable::add_to(HaltRequest& request)
{
    range_ = request.memory.size();
    request.memory.emplace_back(address, size);
}

std::optional<uint32_t> WatchedVariable::value_at(const HaltState& state) const
{
    if (state.memory.size() <= range_ || state.memory[range_].size() != size)
        return std::nullopt;   // the target refused the read
    uint32_t bits = 0;
    for (uint32_t i = 0; i < size; ++i)   // little-endian, as every Cortex-M image mcuprof reads
        bits |= uint32_t(uint8_t(state.memory[range_][i])) << (8 * i);
    return bits;
}

WatchedVariable find_watched_variable(const core::Image& image, const std::string& name)
{
    const std::string option = "--by var:" + name;
    if (name.empty())
        throw mcuprof::Error(image.path(), "", "--by var:NAME needs the name of a global variable");
    if (!image.has_debug_info())
        throw mcuprof::Error(image.path(), ".debug_info",
                             option + " reads the variable's place and type from the DWARF, and the ELF has none "
                                      "(build with -g)");
    const std::optional<core::VariableLayout> found = image.data_layout().variable(name);
    if (!found)
        throw mcuprof::Error(image.path(), ".debug_info",
                             option + ": the DWARF has no global or static variable '" + name +
                                 "' at a fixed address");
    // --gc-sections leaves an unused variable's DWARF with DW_OP_addr 0, where Cortex-M has
    // its vector table, never a variable.
    if (found->address == 0)
        throw mcuprof::Error(image.path(), ".debug_info",
                             option + ": '" + name + "' has no address in the image (the linker removed it as unused?)");
    const core::TypeLayout* type = found->type.get();
    using Kind = core::TypeLayout::Kind;
    if (type == nullptr || (type->kind != Kind::base && type->kind != Kind::enumeration) || type->is_float ||
        (type->size != 1 && type->size != 2 && type->size != 4))
        throw mcuprof::Error(image.path(), ".debug_info",
                             option + ": '" + name + "' is of type " + (type ? "'" + type->name + "'" : "unknown") +
                                 "; grouping reads an integer, boolean or enumeration of 1, 2 or 4 bytes");
    WatchedVariable v;
    v.name = name;
    v.address = found->address;
    v.size = uint32_t(type->size);
    v.is_signed = type->is_signed;
    for (const auto& [value, enumerator] : type->enumerators)
        v.names.emplace(uint32_t(uint64_t(value)) & v.mask(), enumerator);
    return v;
}

} // namespace mcuprof::sources
