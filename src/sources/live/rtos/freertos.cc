// FreeRTOS (tasks.c): pxCurrentTCB points at the running task's TCB_t, whose pcTaskName is a
// char array of configMAX_TASK_NAME_LEN. pxCurrentTCB is set by the first xTaskCreate, long
// before the scheduler starts; xSchedulerRunning (a file-static BaseType_t in tasks.c) turns
// pdTRUE in vTaskStartScheduler, just before the first task is entered.
#include "mcuprof/sources/rtos_awareness.h"

namespace mcuprof::sources {

std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout)
{
    return kernel_layout(layout, "FreeRTOS", "pxCurrentTCB", "pcTaskName", "xSchedulerRunning");
}

} // namespace mcuprof::sources
