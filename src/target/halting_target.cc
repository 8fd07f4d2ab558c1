#include "mcuprof/target/halting_target.h"

#include <sstream>

#include "mcuprof/cortex_m.h"
#include "mcuprof/link/error.h"

namespace mcuprof::sources {

// What a link does not offer: a protocol error naming the link and the operation.
std::string HaltingTarget::monitor(const std::string& command)
{
    throw transport::Error(transport::Error::Kind::protocol, peer(), command,
                           server() + " has no monitor to pace by instructions");
}

std::optional<TargetEnd> HaltingTarget::wait_stop(transport::Duration)
{
    throw transport::Error(transport::Error::Kind::protocol, peer(), "wait for a stop",
                           server() + " does not report stops the target makes by itself");
}

bool HaltingTarget::enable_pcsr(TargetEvents& events)
{
    events.no_pcsr({});   // no core named: this link reads none
    return false;
}

std::vector<uint32_t> HaltingTarget::read_pcsr(unsigned)
{
    throw transport::Error(transport::Error::Kind::protocol, peer(), "DWT_PCSR", "not read over " + server());
}

void HaltingTarget::account_pcsr(PcsrStats&) const {}

std::optional<std::vector<uint32_t>> set_up_pcsr(TargetEvents& events, const std::vector<DebugWordAccess>& cores,
                                                 const std::function<std::vector<uint32_t>()>& first_round)
{
    std::vector<std::optional<uint32_t>> changed;   // per core: DEMCR as found, where TRCENA was set here
    for (const DebugWordAccess& core : cores) {
        const uint32_t value = core.read(cortex_m::demcr);
        changed.push_back(std::nullopt);
        if (!(value & cortex_m::trcena)) {
            core.write(cortex_m::demcr, value | cortex_m::trcena);
            changed.back() = value;
        }
    }
    std::vector<uint32_t> round = first_round();
    for (size_t i = 0; i < cores.size(); ++i)
        if (round.size() <= i || round[i] == 0) {
            const uint32_t cpuid = cores[i].read(cortex_m::cpuid);
            for (size_t j = 0; j < cores.size(); ++j)
                if (changed[j])
                    cores[j].write(cortex_m::demcr, *changed[j]);
            events.no_pcsr({cores[i].core, cpuid != 0 ? std::optional<uint32_t>(cpuid) : std::nullopt});
            return std::nullopt;
        }
    return round;
}

std::vector<std::string> other_openocd_cores(const std::string& names, const std::string& current,
                                             const std::function<std::string(const std::string&)>& type_of)
{
    std::vector<std::string> others;
    std::istringstream words(names);
    for (std::string name; words >> name;) {
        if (name == current)
            continue;
        const std::string type = type_of(name);
        if (type != "mem_ap")   // a bare access port (OpenOCD's mem_ap target) is no core
            others.push_back(name + (type.empty() ? "" : " (" + type + ")"));
    }
    return others;
}

std::vector<std::string> take_examined_cortex_m(std::vector<std::string>& unsampled,
                                                const std::function<bool(const std::string&)>& examined)
{
    std::vector<std::string> taken;
    for (auto it = unsampled.begin(); it != unsampled.end();) {
        const std::string name = it->substr(0, it->find(' '));
        if (*it == name + " (cortex_m)" && examined(name)) {
            taken.push_back(name);
            it = unsampled.erase(it);
        } else {
            ++it;
        }
    }
    return taken;
}

} // namespace mcuprof::sources
