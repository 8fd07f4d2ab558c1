// FreeRTOS (tasks.c): pxCurrentTCB points at the running task's TCB_t, whose pcTaskName is a
// char array of configMAX_TASK_NAME_LEN. pxCurrentTCB is set by the first xTaskCreate, long
// before the scheduler starts; xSchedulerRunning (a file-static BaseType_t in tasks.c) turns
// pdTRUE in vTaskStartScheduler, just before the first task is entered.
#include "mcuprof/sampler/rtos_awareness.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout)
{
    return kernel_layout(layout, "FreeRTOS", "pxCurrentTCB", "pcTaskName", "xSchedulerRunning");
}

// FreeRTOS SMP (V11, configNUMBER_OF_CORES > 1): TCB_t * volatile pxCurrentTCBs[cores], one
// running task per core, the rest as above.
std::optional<TaskLayout> find_freertos_smp_tasks(const core::DataLayout& layout)
{
    auto tasks = kernel_layout(layout, "FreeRTOS", "pxCurrentTCBs[0]", "pcTaskName", "xSchedulerRunning");
    if (tasks)
        add_core_pointers(layout, *tasks, [](unsigned core) { return "pxCurrentTCBs[" + std::to_string(core) + "]"; });
    return tasks;
}

} // namespace mcuprof::sources
