#pragma once
// Which task runs, read at every halt with no firmware change. Every kernel keeps a pointer
// to the running task's control block at a fixed address (FreeRTOS's pxCurrentTCB, Zephyr's
// _kernel.cpus[0].current), the block holds the task's name, and a flag says whether the
// scheduler has started (before it, the pointer may already point at a created task that
// does not run yet). Where these sit depends on the kernel's configuration, so each kernel's
// finder takes them from the ELF's DWARF; nothing is assumed.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/target/halting_target.h"

namespace mcuprof::core {
class DataLayout;
class Image;
}

namespace mcuprof::sources {

struct TaskLayout {
    uint32_t current_task = 0;   // address of the pointer to the running task's control block
    uint32_t name_offset = 0;    // of the name in the control block
    uint32_t name_length = 0;    // bytes of the name array; 0: the kernel keeps no names
    // The kernel's "the scheduler runs" flag: its address (0: none, the pointer alone says,
    // 0 before the start) and size in bytes. Not 0 once the first task runs.
    uint32_t started_flag = 0;
    uint32_t started_size = 0;
    std::string kernel{};        // "FreeRTOS", "Zephyr": for messages
    // An SMP kernel's pointers of cores 1, 2, ...: their running tasks (FreeRTOS SMP's
    // pxCurrentTCBs[i], Zephyr's _kernel.cpus[i].current), as many as the kernel has cores.
    std::vector<uint32_t> other_cores_current{};
};

// One finder per kernel, each in its own file (src/sampler/rtos/): the layout when the
// firmware's DWARF has that kernel's symbols, else nothing.
std::optional<TaskLayout> find_freertos_tasks(const core::DataLayout& layout);
std::optional<TaskLayout> find_zephyr_threads(const core::DataLayout& layout);
std::optional<TaskLayout> find_freertos_smp_tasks(const core::DataLayout& layout);

// An SMP kernel: the addresses of the current-task pointers of cores 1, 2, ... into
// tasks.other_cores_current, from `path_of(core)` ("_kernel.cpus[1].current"), up to the
// array's end as the DWARF gives it.
void add_core_pointers(const core::DataLayout& layout, TaskLayout& tasks, std::string (*path_of)(unsigned core));

// What the finders share: the layout from the kernel's names. `current` is the member path of
// the pointer to the running task's control block (a structure); `name` its char array member
// (absent: tasks are named by address); `started` the variable that turns non-zero when the
// scheduler runs (absent: the pointer alone says). Nothing when `current` is not such a pointer.
std::optional<TaskLayout> kernel_layout(const core::DataLayout& layout, const std::string& kernel,
                                        std::string_view current, std::string_view name,
                                        std::string_view started);

// The running task's layout for the kernel the ELF's DWARF shows, tried in turn among the
// kernels known; nothing when none matches or the ELF has no DWARF.
std::optional<TaskLayout> detect_rtos(const core::DataLayout& layout);
std::optional<TaskLayout> detect_rtos(const core::Image& image);

// The running task at each halt: the words to read ride along with the halt's request, and
// the names of the control blocks met so far are read from the target once each.
class TaskNames {
public:
    explicit TaskNames(TaskLayout layout) : layout_(std::move(layout)) {}
    const TaskLayout& layout() const { return layout_; }

    // Adds the running-task pointer and the started flag to what the halt reads.
    void add_to(HaltRequest& request);

    struct Running {
        uint32_t control_block = 0;
        const std::string* name = nullptr;
        bool name_added = false;   // the name was read just now
    };
    // The task that ran at the halt read through add_to's request on `core` (core 0's state
    // holds every core's pointer); nothing before the scheduler started, when the target
    // refused the read, or for a core the kernel does not have.
    std::optional<Running> running(const HaltState& state, HaltingTarget& target, size_t core = 0);

    // The task's name; `added` tells whether it was read just now.
    const std::string& name_of(HaltingTarget& target, uint32_t tcb, bool& added);

private:
    TaskLayout layout_;
    size_t first_range_ = 0;   // of add_to's ranges in the request
    std::map<uint32_t, std::string> names_;
};

} // namespace mcuprof::sources
