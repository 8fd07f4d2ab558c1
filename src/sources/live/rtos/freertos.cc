// FreeRTOS (tasks.c): pxCurrentTCB points at the running task's TCB_t, whose pcTaskName is a
// char array of configMAX_TASK_NAME_LEN. pxCurrentTCB is set by the first xTaskCreate, long
// before the scheduler starts; xSchedulerRunning (a file-static BaseType_t in tasks.c) turns
// pdTRUE in vTaskStartScheduler, just before the first task is entered.
#include "mcuprof/core/data_layout.h"
#include "mcuprof/sources/rtos_awareness.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout)
{
    using Kind = core::TypeLayout::Kind;
    const auto current = layout.variable("pxCurrentTCB");
    if (!current || !current->type || current->type->kind != Kind::pointer || !current->type->element)
        return std::nullopt;
    const auto tcb = layout.complete(current->type->element);
    const auto name = layout.field(*tcb, "pcTaskName");
    if (!name || name->type->kind != Kind::array || name->type->count == 0)
        return std::nullopt;
    TaskLayout tasks{current->address, uint32_t(name->offset), uint32_t(name->type->count)};
    tasks.kernel = "FreeRTOS";
    const auto running = layout.variable("xSchedulerRunning");
    if (running && running->type && running->type->size >= 1 && running->type->size <= 4) {
        tasks.started_flag = running->address;
        tasks.started_size = uint32_t(running->type->size);
    }
    return tasks;
}

} // namespace mcuprof::sources
