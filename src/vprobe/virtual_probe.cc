#include "mcuprof/vprobe/virtual_probe.h"

namespace mcuprof::vprobe {

VirtualProbe::VirtualProbe(DebugTarget& target, CortexMDebug::Options options)
    : cortex_(target, std::move(options)), ap_(cortex_), dp_(jtag_dp::cortex_m_idcode), tap_(dp_)
{
    dp_.attach(0, ap_);   // the AHB-AP is AP 0 on a Cortex-M3/M4
}

void VirtualProbe::reset(bool trst, bool srst)
{
    tap_.set_trst(trst);
    if (srst && !srst_)
        cortex_.system_reset();
    srst_ = srst;
}

} // namespace mcuprof::vprobe
