#pragma once
// The whole virtual probe, bottom-up as the debug stack: the pins of a remote_bitbang
// client drive a TAP, the TAP a JTAG-DP, the DP a MEM-AP, the MEM-AP the Cortex-M debug
// bus, the bus a DebugTarget.
#include "mcuprof/vprobe/cortex_m_debug.h"
#include "mcuprof/vprobe/jtag_dp.h"
#include "mcuprof/vprobe/mem_ap.h"
#include "mcuprof/vprobe/remote_bitbang.h"
#include "mcuprof/vprobe/tap_controller.h"

namespace mcuprof::vprobe {

class VirtualProbe : public JtagPins {
public:
    explicit VirtualProbe(DebugTarget& target) : VirtualProbe(target, CortexMDebug::Options{}) {}
    VirtualProbe(DebugTarget& target, CortexMDebug::Options options);

    void write(bool tck, bool tms, bool tdi) override { tap_.set_pins(tck, tms, tdi); }
    bool tdo() override { return tap_.tdo(); }
    // TRST resets the TAP; SRST, when it becomes asserted, resets the system.
    void reset(bool trst, bool srst) override;

    TapController& tap() { return tap_; }
    JtagDp& dp() { return dp_; }
    MemAp& ap() { return ap_; }
    CortexMDebug& cortex() { return cortex_; }

private:
    CortexMDebug cortex_;
    MemAp ap_;
    JtagDp dp_;
    TapController tap_;
    bool srst_ = false;
};

} // namespace mcuprof::vprobe
