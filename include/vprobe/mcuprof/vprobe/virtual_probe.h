#pragma once
// The whole virtual probe, bottom-up as the debug stack: the pins of a remote_bitbang
// client drive a TAP, the TAP a JTAG-DP, the DP a MEM-AP per core, each MEM-AP that core's
// bus (the chip's ID registers over the Cortex-M debug bus), each bus a DebugTarget. The chip
// (vprobe --chip) gives the DP's IDs and the ID registers; by default the generic DP.
#include <memory>
#include <vector>

#include "mcuprof/vprobe/chip.h"
#include "mcuprof/vprobe/cortex_m_debug.h"
#include "mcuprof/vprobe/jtag_dp.h"
#include "mcuprof/vprobe/mem_ap.h"
#include "mcuprof/vprobe/remote_bitbang.h"
#include "mcuprof/vprobe/tap_controller.h"

namespace mcuprof::vprobe {

class VirtualProbe : public JtagPins {
public:
    explicit VirtualProbe(DebugTarget& target) : VirtualProbe(target, CortexMDebug::Options{}) {}
    VirtualProbe(DebugTarget& target, CortexMDebug::Options options)
        : VirtualProbe(std::vector<DebugTarget*>{&target}, std::move(options)) {}
    // Several cores on one debug port, core i behind access port i (APSEL i), as a dual-core
    // part puts each core's AHB-AP on its DP (STM32H745: the M7 on AP0, the M4 on AP3).
    // `chip` must outlive the probe (find_chip's entries and generic_chip() do). A chip without
    // JTAG (Chip::jtag_idcode empty) still has the TAP, answering IDCODE 0: its users serve SWD.
    VirtualProbe(const std::vector<DebugTarget*>& cores, CortexMDebug::Options options,
                 const Chip& chip = generic_chip());

    void write(bool tck, bool tms, bool tdi) override { tap_.set_pins(tck, tms, tdi); }
    bool tdo() override { return tap_.tdo(); }
    // TRST resets the TAP; SRST, when it becomes asserted, resets the system.
    void reset(bool trst, bool srst) override;

    TapController& tap() { return tap_; }
    JtagDp& dp() { return dp_; }
    unsigned cores() const { return unsigned(cortex_.size()); }
    MemAp& ap(unsigned core = 0) { return *ap_.at(core); }
    CortexMDebug& cortex(unsigned core = 0) { return *cortex_.at(core); }

private:
    std::vector<std::unique_ptr<CortexMDebug>> cortex_;
    std::vector<std::unique_ptr<ChipBus>> bus_;
    std::vector<std::unique_ptr<MemAp>> ap_;
    JtagDp dp_;
    TapController tap_;
    bool srst_ = false;
};

} // namespace mcuprof::vprobe
