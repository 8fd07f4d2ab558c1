#include "cpu_load.h"

#include <unordered_map>

namespace mcuprof::core::attribution {

bool is_idle_task(const std::string& name)
{
    return name == "IDLE" || name.rfind("idle", 0) == 0;
}

std::optional<CpuLoad> cpu_load(const Profile& profile, const SampleSet& samples, const FoundAsleep& found_asleep,
                                const SymbolTable& symbols)
{
    if (!samples.measures_time || profile.total <= 0)
        return std::nullopt;
    CpuLoad load;
    std::unordered_map<uint32_t, bool> asleep_at;
    std::unordered_map<uint32_t, bool> idle_tag;
    for (const auto& [tag, name] : samples.tag_names)
        idle_tag[tag] = is_idle_task(name);
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const uint32_t pc = samples.pcs[i];
        auto [known, added] = asleep_at.emplace(pc, false);
        if (added)
            known->second = caught_asleep(samples, symbols, pc);
        if (known->second || found_asleep(i))
            load.sleep_samples += 1;
        else if (!samples.tags.empty() && idle_tag[samples.tags[i]])
            load.idle_task_samples += 1;
    }
    if (auto sleep = samples.without_address.find(sleep_row_name); sleep != samples.without_address.end())
        load.sleep_samples += double(sleep->second);
    load.busy = share_of(profile.total - load.sleep_samples - load.idle_task_samples, profile.total, false);
    load.sleep = share_of(load.sleep_samples, profile.total, false);
    return load;
}

} // namespace mcuprof::core::attribution
