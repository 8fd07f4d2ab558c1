#pragma once
// Which task runs, read at every halt with no firmware change: FreeRTOS keeps the running
// task's control block in pxCurrentTCB, and the block holds the task's name (pcTaskName).
// Where the name sits inside the block depends on the kernel's configuration, so it is
// taken from the ELF's DWARF, not assumed.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "mcuprof/sources/halting_target.h"

namespace mcuprof::core {
class DataLayout;
}

namespace mcuprof::sources {

struct TaskLayout {
    uint32_t current_task = 0;   // address of pxCurrentTCB
    uint32_t name_offset = 0;    // of pcTaskName in the control block
    uint32_t name_length = 0;    // configMAX_TASK_NAME_LEN
};

// The layout when the firmware has FreeRTOS's pxCurrentTCB (a pointer to a structure with a
// char array pcTaskName), else nothing.
std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout);

// The running task's layout for the kernel the ELF's DWARF shows, tried in turn among the
// kernels known (FreeRTOS); nothing when none matches or the ELF has no DWARF.
std::optional<TaskLayout> detect_rtos(const core::DataLayout& layout);
std::optional<TaskLayout> detect_rtos(const std::string& elf_path);

// The names of the control blocks met so far; a new one is read from the target once.
class TaskNames {
public:
    explicit TaskNames(TaskLayout layout) : layout_(layout) {}
    const TaskLayout& layout() const { return layout_; }
    // The task's name; `added` tells whether it was read just now.
    const std::string& name_of(HaltingTarget& target, uint32_t tcb, bool& added);

private:
    TaskLayout layout_;
    std::map<uint32_t, std::string> names_;
};

} // namespace mcuprof::sources
