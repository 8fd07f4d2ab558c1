#include "mcuprof/sources/rtos_awareness.h"

#include <cstdio>

#include "mcuprof/core/data_layout.h"
#include "mcuprof/core/error.h"

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

std::optional<TaskLayout> detect_rtos(const core::DataLayout& layout)
{
    // One finder per kernel, each recognising its own kernel's symbols.
    using Finder = std::optional<TaskLayout> (*)(const core::DataLayout&);
    for (Finder find : {&find_freertos_tasks})
        if (auto tasks = find(layout))
            return tasks;
    return std::nullopt;
}

std::optional<TaskLayout> detect_rtos(const std::string& elf_path)
{
    try {
        return detect_rtos(core::DataLayout(elf_path));
    } catch (const core::Error&) {
        return std::nullopt;   // no DWARF: no task names, the samples are still good
    }
}

const std::string& TaskNames::name_of(HaltingTarget& target, uint32_t tcb, bool& added)
{
    added = false;
    auto known = names_.find(tcb);
    if (known != names_.end())
        return known->second;
    // A refused read only leaves the task unnamed; a failed link throws.
    std::string name = target.read_memory(tcb + layout_.name_offset, layout_.name_length);
    name = name.substr(0, name.find('\0'));
    if (name.empty()) {
        char text[16];
        std::snprintf(text, sizeof text, "0x%08x", tcb);
        name = text;
    }
    added = true;
    return names_.emplace(tcb, name).first->second;
}

} // namespace mcuprof::sources
