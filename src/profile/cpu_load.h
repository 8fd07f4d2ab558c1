#pragma once
// Inside the profile library only: the share of time the CPU was busy.
#include <optional>
#include <string>

#include "aggregation.h"

namespace mcuprof::core::attribution {

// The RTOS's idle task, by the name its kernel gives it: FreeRTOS's configIDLE_TASK_NAME
// ("IDLE" by default), Zephyr's idle thread ("idle", "idle 00" per CPU). Its time is idle time.
bool is_idle_task(const std::string& name);

// The CPU load of samples that measure time: the samples asleep (a PC just past a WFI or WFE,
// a halt that found DHCSR.S_SLEEP, or the input's own "(sleep)" row) and those of the RTOS
// idle task are idle; the rest is load. None when the samples do not measure time.
std::optional<CpuLoad> cpu_load(const Profile& profile, const SampleSet& samples, const FoundAsleep& found_asleep,
                                const SymbolTable& symbols);

} // namespace mcuprof::core::attribution
