// Zephyr (kernel/include/kernel_structs.h, include/zephyr/kernel/thread.h): the kernel's one
// struct z_kernel _kernel holds per CPU a struct _cpu whose `current` points at the running
// struct k_thread; with CONFIG_THREAD_NAME the thread has char name[CONFIG_THREAD_MAX_NAME_LEN]
// (without it, threads are told apart by address). During start-up `current` points at a
// dummy thread on the start-up stack; the kernel sets z_sys_post_kernel (a bool in
// kernel/init.c) as the first thing its main thread does, so that flag says the scheduler
// runs. One CPU is read: cpus[0].
#include "mcuprof/sampler/rtos_awareness.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_zephyr_threads(const core::DataLayout& layout)
{
    auto threads = kernel_layout(layout, "Zephyr", "_kernel.cpus[0].current", "name", "z_sys_post_kernel");
    // SMP (CONFIG_SMP, CONFIG_MP_MAX_NUM_CPUS > 1): one struct _cpu per core, each its current.
    if (threads)
        add_core_pointers(layout, *threads,
                          [](unsigned core) { return "_kernel.cpus[" + std::to_string(core) + "].current"; });
    return threads;
}

} // namespace mcuprof::sources
