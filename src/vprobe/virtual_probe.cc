#include "mcuprof/vprobe/virtual_probe.h"

namespace mcuprof::vprobe {

VirtualProbe::VirtualProbe(const std::vector<DebugTarget*>& cores, CortexMDebug::Options options, const Chip& chip)
    : dp_(chip.jtag_idcode.value_or(0), chip.dpidr), tap_(dp_)
{
    for (DebugTarget* core : cores) {
        options.core = unsigned(cortex_.size());
        cortex_.push_back(std::make_unique<CortexMDebug>(*core, options));
        bus_.push_back(std::make_unique<ChipBus>(chip, *cortex_.back()));
        ap_.push_back(std::make_unique<MemAp>(*bus_.back()));
        // The AHB-AP is AP 0 on a Cortex-M3/M4; a second core's is AP 1.
        dp_.attach(uint8_t(ap_.size() - 1), *ap_.back());
    }
}

void VirtualProbe::reset(bool trst, bool srst)
{
    tap_.set_trst(trst);
    if (srst && !srst_)
        cortex_.front()->system_reset();   // a system reset: every core
    srst_ = srst;
}

} // namespace mcuprof::vprobe
