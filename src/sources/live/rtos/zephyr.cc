// Zephyr (kernel/include/kernel_structs.h, include/zephyr/kernel/thread.h): the kernel's one
// struct z_kernel _kernel holds per CPU a struct _cpu whose `current` points at the running
// struct k_thread; with CONFIG_THREAD_NAME the thread has char name[CONFIG_THREAD_MAX_NAME_LEN].
// During start-up `current` points at a dummy thread on the start-up stack; the kernel sets
// z_sys_post_kernel (a bool in kernel/init.c) as the first thing its main thread does, so
// that flag says the scheduler runs. One CPU is read: cpus[0].
#include "mcuprof/core/data_layout.h"
#include "mcuprof/sources/rtos_awareness.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_zephyr_threads(const core::DataLayout& layout)
{
    using Kind = core::TypeLayout::Kind;
    const auto current = layout.object("_kernel.cpus[0].current");
    if (!current || current->type->kind != Kind::pointer || !current->type->element)
        return std::nullopt;
    const auto thread = layout.complete(current->type->element);
    if (thread->kind != Kind::structure)
        return std::nullopt;
    TaskLayout threads{current->address, 0, 0};
    threads.kernel = "Zephyr";
    // Without CONFIG_THREAD_NAME the threads are told apart by address alone.
    const auto name = layout.field(*thread, "name");
    if (name && name->type->kind == Kind::array && name->type->count > 0) {
        threads.name_offset = uint32_t(name->offset);
        threads.name_length = uint32_t(name->type->count);
    }
    const auto started = layout.variable("z_sys_post_kernel");
    if (started && started->type && started->type->size >= 1 && started->type->size <= 4) {
        threads.started_flag = started->address;
        threads.started_size = uint32_t(started->type->size);
    }
    return threads;
}

} // namespace mcuprof::sources
