#include "mcuprof/sampler/rtos_awareness.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::sources {

namespace {

// The kernels known, one finder each (src/sampler/rtos/<kernel>.cc), with the variable
// its running task is read through: the ELF symbol table names it (global or local) wherever
// the DWARF describes it, so an image without any of them needs no reading of its DWARF. A
// new kernel is its file and its row here. The first whose symbols the DWARF has wins.
using Finder = std::optional<TaskLayout> (*)(const core::DataLayout&);
struct Kernel {
    Finder find;
    const char* variable;
};
constexpr Kernel kernels[] = {
    {&find_freertos_tasks, "pxCurrentTCB"},
    {&find_freertos_smp_tasks, "pxCurrentTCBs"},
    {&find_zephyr_threads, "_kernel"},
};

uint32_t little_endian(const std::string& bytes)
{
    uint32_t value = 0;
    for (size_t i = bytes.size(); i-- > 0;)
        value = (value << 8) | uint8_t(bytes[i]);
    return value;
}

} // namespace

std::optional<TaskLayout> kernel_layout(const core::DataLayout& layout, const std::string& kernel,
                                        std::string_view current, std::string_view name,
                                        std::string_view started)
{
    using Kind = core::TypeLayout::Kind;
    const auto pointer = layout.object(current);
    if (!pointer || !pointer->type || pointer->type->kind != Kind::pointer || !pointer->type->element)
        return std::nullopt;
    const auto block = layout.complete(pointer->type->element);
    if (block->kind != Kind::structure)
        return std::nullopt;
    TaskLayout tasks;
    tasks.kernel = kernel;
    tasks.current_task = pointer->address;
    const auto text = layout.field(*block, name);
    if (text && text->type->kind == Kind::array && text->type->count > 0) {
        tasks.name_offset = uint32_t(text->offset);
        tasks.name_length = uint32_t(text->type->count);
    }
    const auto flag = layout.variable(started);
    if (flag && flag->type && flag->type->size >= 1 && flag->type->size <= 4) {
        tasks.started_flag = flag->address;
        tasks.started_size = uint32_t(flag->type->size);
    }
    return tasks;
}

void add_core_pointers(const core::DataLayout& layout, TaskLayout& tasks, std::string (*path_of)(unsigned core))
{
    for (unsigned core = 1; core < 256; ++core) {
        const auto pointer = layout.object(path_of(core));
        if (!pointer || !pointer->type || pointer->type->kind != core::TypeLayout::Kind::pointer)
            return;
        tasks.other_cores_current.push_back(pointer->address);
    }
}

std::optional<TaskLayout> detect_rtos(const core::DataLayout& layout)
{
    for (const Kernel& kernel : kernels)
        if (auto tasks = kernel.find(layout))
            return tasks;
    return std::nullopt;
}

std::optional<TaskLayout> detect_rtos(const core::Image& image)
{
    if (!image.has_debug_info())
        return std::nullopt;   // no DWARF: no task names, the samples are still good
    try {
        // The whole data layout reads every DWARF entry: 0.3 s on 20 MB of DWARF, before the
        // first sample. Not for an image whose symbols name no kernel's variable (a symbol
        // table without data symbols says nothing: the DWARF is read then).
        const core::SymbolTable& symbols = image.symbols();
        const bool named = std::any_of(std::begin(kernels), std::end(kernels), [&](const Kernel& kernel) {
            return symbols.find_object(kernel.variable).has_value();
        });
        if (!named && symbols.has_objects())
            return std::nullopt;
        return detect_rtos(image.data_layout());
    } catch (const core::Error&) {
        return std::nullopt;   // no DWARF: no task names, the samples are still good
    }
}

void TaskNames::add_to(HaltRequest& request)
{
    first_range_ = request.memory.size();
    request.memory.emplace_back(layout_.current_task, 4);
    if (layout_.started_flag != 0)
        request.memory.emplace_back(layout_.started_flag, layout_.started_size);
    for (uint32_t address : layout_.other_cores_current)   // an SMP kernel: every core's pointer
        request.memory.emplace_back(address, 4);
}

std::optional<TaskNames::Running> TaskNames::running(const HaltState& state, HaltingTarget& target, size_t core)
{
    const size_t ranges = (layout_.started_flag != 0 ? 2 : 1) + layout_.other_cores_current.size();
    if (state.memory.size() < first_range_ + ranges || core > layout_.other_cores_current.size())
        return std::nullopt;
    const size_t pointer_range = core == 0 ? first_range_ : first_range_ + ranges - layout_.other_cores_current.size() + core - 1;
    const std::string& pointer = state.memory[pointer_range];
    if (pointer.size() != 4)
        return std::nullopt;   // the target refused the read
    if (layout_.started_flag != 0) {
        const std::string& flag = state.memory[first_range_ + 1];
        if (flag.size() != layout_.started_size || little_endian(flag) == 0)
            return std::nullopt;   // the scheduler has not started
    }
    const uint32_t tcb = little_endian(pointer);
    if (tcb == 0)
        return std::nullopt;   // no task yet (a kernel without a started flag)
    Running task;
    task.control_block = tcb;
    task.name = &name_of(target, tcb, task.name_added);
    return task;
}

const std::string& TaskNames::name_of(HaltingTarget& target, uint32_t tcb, bool& added)
{
    added = false;
    auto known = names_.find(tcb);
    if (known != names_.end())
        return known->second;
    // A refused read only leaves the task unnamed; a failed link throws.
    std::string name;
    if (layout_.name_length > 0) {
        name = target.read_memory(tcb + layout_.name_offset, layout_.name_length);
        name = name.substr(0, name.find('\0'));
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
