#include "mcuprof/sources/rtos_awareness.h"

#include <cstdio>

#include "mcuprof/core/data_layout.h"
#include "mcuprof/transport/error.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout)
{
    using Kind = core::TypeLayout::Kind;
    const auto current = layout.variable("pxCurrentTCB");
    if (!current || !current->type || current->type->kind != Kind::pointer || !current->type->element)
        return std::nullopt;
    // The pointer's target may be a stub (a structure still being laid out where the
    // pointer was met): look the full one up by name.
    std::shared_ptr<const core::TypeLayout> tcb = current->type->element;
    if (tcb->members.empty() && !tcb->name.empty())
        if (auto full = layout.type(tcb->name))
            tcb = full;
    const core::TypeLayout::Member* name = tcb->member("pcTaskName");
    if (name == nullptr || !name->type || name->type->kind != Kind::array || name->type->count == 0)
        return std::nullopt;
    return TaskLayout{current->address, uint32_t(name->offset), uint32_t(name->type->count)};
}

const std::string& TaskNames::name_of(transport::RspClient& gdb, uint32_t tcb, bool& added)
{
    added = false;
    auto known = names_.find(tcb);
    if (known != names_.end())
        return known->second;
    std::string name;
    try {
        name = gdb.read_memory(tcb + layout_.name_offset, layout_.name_length);
        name = name.substr(0, name.find('\0'));
    } catch (const transport::Error& e) {
        if (e.kind() != transport::Error::Kind::protocol)
            throw;   // the link failed; a refused read only leaves the task unnamed
    }
    if (name.empty()) {
        char text[16];
        std::snprintf(text, sizeof text, "0x%08x", tcb);
        name = text;
    }
    added = true;
    return names_.emplace(tcb, name).first->second;
}

} // namespace mcuprof::sources
