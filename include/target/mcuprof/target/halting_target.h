#pragma once
// What the sampling loop needs of a debug link, whatever carries it (GDB RSP, OpenOCD's Tcl
// port, ...): halt, resume, wait for a stop, read the halt state (registers plus memory) in
// one round trip, read memory, describe the target. One adapter per link, each named for
// its link (RspHaltingTarget in rsp_sampler.cc, TclHaltingTarget in openocd_halting_target.cc;
// the vprobe's RspTarget is the other way round, a debug target served over RSP); the loop
// (sampling_loop.h), the stack reader and the RTOS awareness are written once over this
// interface. OpenOCD's debug-register scripts, which both adapters send: openocd_scripts.h.
#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mcuprof/image/unwind/unwinder.h"
#include "mcuprof/profile/samples.h"
#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/inputs/run_header.h"

namespace mcuprof::transport {
class Error;
}

namespace mcuprof::sources {

// A core without DWT_PCSR (HaltingTarget::enable_pcsr): the one whose DWT_PCSR read 0 once
// DEMCR.TRCENA was set (set_up_pcsr), with its CPUID where that was read; or, `core` empty, a
// link that reads no DWT_PCSR at all.
struct NoPcsr {
    std::string core;               // as messages name it ("target nrf51.cpu")
    std::optional<uint32_t> cpuid;
};

// What a target announces while it samples (it resumed a core found halted, it turned
// OpenOCD's polling off, ...): a kind and a message for the user, which the sampler's sink
// records as the recording's events.
class TargetEvents {
public:
    virtual ~TargetEvents() = default;
    virtual void event(const std::string& kind, const std::string& message) = 0;
    // enable_pcsr found no DWT_PCSR: for the sampling loop, which refuses --mode pcsr with it
    // or falls back to halting (--mode pcsr,halt) with a `fallback` event; others ignore it.
    virtual void no_pcsr(const NoPcsr&) {}
};

// DWT_PCSR sampling reads the PC of a running core: no halts, so its figures are the batches'.
struct PcsrStats {
    unsigned batch = 0;                   // reads per round trip
    uint64_t reads = 0;
    uint64_t halted_reads = 0;            // 0xFFFFFFFF: the core was halted, dropped
    std::vector<double> round_trip_us;    // one per batch: request sent -> answer received
    std::optional<uint64_t> unused_reads; // OpenOCD's profile chunks: reads no sample came from
};

using Clock = std::chrono::steady_clock;

// Memory read with the registers, in the halt's round trip: (address, length in bytes).
using MemoryRange = std::pair<uint32_t, uint32_t>;

// The banked MSP and PSP (ARMv7-M ARM, B1.4.1); on ARMv8-M with the Security Extension also the
// Non-secure state's, and its CONTROL (whose SPSEL says which stack its Thread mode uses), as
// the Secure state sees them (core::CoreRegisters::other_security_state).
enum class StackPointer { main, process, main_nonsecure, process_nonsecure, control_nonsecure };

struct HaltRequest {
    // pc, lr, sp and xPSR always; with all_registers r0-r12 and, where the link has them, the
    // banked stack pointers MSP and PSP (what the unwinder starts from).
    bool all_registers = false;
    std::vector<MemoryRange> memory;
    // The caller reads more and then resumes; otherwise a link that can resumes the target in
    // the same round trip.
    bool stay_halted = false;
    // A multi-core link that can: each other core's stack window read in the halt's round trip
    // from that core's own SP, this many bytes (0: none), ending at `stack_top` when it is near.
    uint32_t other_cores_stack_bytes = 0;
    std::optional<uint32_t> stack_top;
    // The stack reader's guess of the window (the last halt's SP), when it sent one: its index
    // in `memory`. A link that reads the registers before memory in the halt (an ST-Link's
    // READALLREGS, then a block read) reads the window from the new SP instead, this many
    // bytes (ending at `stack_top` when near), into HaltState::stack_window, and leaves the
    // guess's entry empty.
    std::optional<size_t> stack_guess;
    uint32_t stack_bytes = 0;
};

// Target memory read at a halt: its address and bytes (empty where the target refused it).
struct MemoryWindow {
    uint32_t address = 0;
    std::string bytes;
};

struct HaltState {
    core::CoreRegisters registers;
    std::vector<std::string> memory;   // one per requested range; empty where the target refused
    // A multi-core target: the registers of cores 1, 2, ... at the same halt (the request's
    // registers; its memory ranges are core 0's).
    std::vector<core::CoreRegisters> other_cores;
    // Per core, core 0 first: DHCSR.S_SLEEP as the halt request found it (ARMv7-M ARM C1.6.2:
    // the core was asleep in WFI, WFE or on sleep-on-exit). A halt wakes the core into Debug
    // state, so only a link that reads DHCSR before it halts can tell (OpenOCD's Tcl port);
    // empty where the link did not read it.
    std::vector<bool> asleep;
    // Per other core (core 1 first): how long after core 0's its stop came, bracketed by the
    // link's clocks, where the link stopped them one after another and measured it (OpenOCD);
    // empty otherwise.
    std::vector<core::StopBounds> stop_after;
    // Per other core (core 1 first), with a request's other_cores_stack_bytes: its stack window,
    // read from its own SP in the halt's round trip; empty where the link did not.
    std::vector<MemoryWindow> other_stack_windows;
    // This core's stack window read from its own SP (another core's halt state, the unwinder's
    // first memory), when the halt's round trip read one.
    std::optional<MemoryWindow> stack_window;
};

// The target ended instead of halting: it exited, was terminated or stopped by itself.
struct TargetEnd {
    bool exited = false;   // exited or terminated (it will not run again), else stopped by itself
    std::string description;
};

struct Halt {
    std::optional<TargetEnd> ended;   // set: nothing was read
    // Set: no halt was made, nothing read, and the target is as it was: the core is another
    // program's for now (a debugger sharing the probe), for this reason. The loop waits and
    // asks again, sampling nothing meanwhile.
    std::optional<std::string> yielded;
    HaltState state;
    Clock::time_point stopped;        // when the halt was known: the sample's time
    Clock::time_point ran_until;      // the target ran until here (the stop, or the request when unknown)
    bool running = false;             // resumed in the same round trip
};

class HaltingTarget {
public:
    virtual ~HaltingTarget() = default;

    // The recording header's link part: the source, the link's peer, the target and its cores.
    virtual RunHeader::Link link_header() const = 0;
    // What users call the other end in messages ("OpenOCD", "the GDB server").
    virtual std::string server() const = 0;
    // The link's far end as errors name it ("gdb 127.0.0.1:1234").
    virtual std::string peer() const = 0;

    // The cores sampled at each halt, by name ("core 1 (thread p02.02)"); one core: empty.
    virtual std::vector<std::string> cores() const { return {}; }
    // Cores the link shows and does not sample (OpenOCD's other targets), by name, for the
    // report to name: never a silent profile of one core as the chip's.
    virtual std::vector<std::string> unsampled_cores() { return {}; }
    // Later reads (read_memory, read_stack_pointer) go to this core of a multi-core target;
    // core 0 again before the target resumes.
    virtual void select_core(size_t /*core*/) {}

    // Gets the target running for sampling, saying so through `events` when that is news.
    virtual void start(TargetEvents& events) = 0;
    virtual void resume() = 0;
    // A stop the running target sent by itself meanwhile (it exited), looked at without waiting.
    virtual std::optional<TargetEnd> poll_stop() { return std::nullopt; }
    // Halts the running target and reads its state.
    virtual Halt halt_and_read(const HaltRequest& request) = 0;
    // The state of a target that is halted already (after wait_stop, or stay_halted).
    virtual HaltState read_halt_state(const HaltRequest& request) = 0;
    // A banked stack pointer the halt's read did not give (the server does not describe it),
    // read now from the halted target; nothing when the link cannot. `halted` are the
    // registers read at this halt. Throws transport::Error when the link fails.
    virtual std::optional<uint32_t> read_stack_pointer(StackPointer, const core::CoreRegisters& /*halted*/)
    {
        return std::nullopt;
    }
    // Instructions the target ran at the halts for the debugger's own reads (the stub that
    // reads a stack pointer steps one), since the link was made: instruction-count pacing
    // adds them to the guest's count.
    virtual uint64_t instructions_stepped() const { return 0; }
    // Memory of the halted target; empty when the target refuses it. Throws transport::Error
    // when the link fails.
    virtual std::string read_memory(uint32_t address, uint32_t length) = 0;
    // Whether an error leaves the link usable (a command the server refused) or not.
    virtual bool link_survives(const transport::Error& error) const = 0;
    // At the end, whatever happened: the target runs (over a new connection when the link
    // was lost). Reports through `events`. Throws transport::Error only when link_lost is
    // false and the link fails now; the loop then calls it again with link_lost.
    virtual void leave_running(TargetEvents& events, bool link_lost) = 0;

    // Pacing by instructions (QEMU record/replay): the server's monitor, and the wait for a
    // stop the target makes by itself. Links without them throw transport::Error (protocol).
    virtual std::string monitor(const std::string& command);
    virtual std::optional<TargetEnd> wait_stop(transport::Duration timeout);

    // DWT_PCSR sampling of a running core (ARMv7-M ARM, C1.8.4): enable it (false when a
    // core has none, announced through events.no_pcsr), then read it `count` times in one
    // round trip.
    virtual bool enable_pcsr(TargetEvents& events);
    // After enable_pcsr found none and the loop samples by halts instead (--mode pcsr,halt):
    // what halting needs of the link that start() left out for DWT_PCSR sampling.
    virtual void fall_back_to_halts(TargetEvents&) {}
    virtual std::vector<uint32_t> read_pcsr(unsigned count);
    // How many cores each read round covers: read_pcsr then gives count rounds of one read per
    // core, core 0's first.
    virtual size_t pcsr_cores() const { return 1; }
    // At the end of DWT_PCSR sampling, the reads as the link made them, where they are not
    // the samples' count (a link that reads more than it delivers); by default unchanged.
    virtual void account_pcsr(PcsrStats& stats) const;
    // After a command the server refused: whether it still reaches the target (false: the
    // link between the server and its probe, or the probe and the target, is gone).
    virtual bool reaches_target() { return true; }
    // The commands the link has sent the probe since it was made, where it counts them (an
    // ST-Link's USB commands, each one bus round trip): the sampler's cost on that link.
    virtual std::optional<uint64_t> probe_commands() const { return std::nullopt; }
};

// One core's debug registers as a link reaches them, for set_up_pcsr: its name in messages,
// a word read and a word write (each throws transport::Error when the link fails).
struct DebugWordAccess {
    std::string core;
    std::function<uint32_t(uint32_t address)> read;
    std::function<void(uint32_t address, uint32_t value)> write;
};

// The DWT_PCSR set-up every link makes before its first batch (HaltingTarget::enable_pcsr):
// DEMCR.TRCENA set on each core where it is clear (ARMv7-M ARM, C1.6.5: it enables the DWT;
// read-modify-write), then `first_round` (one DWT_PCSR read per core, cores in order, outside
// the samples). A core that reads 0 there has no DWT_PCSR (RAZ; a Cortex-M0, M0+ or M23 has
// it wherever the part includes the DWT, which is the vendor's choice: ARMv6-M ARM C1.7.2,
// Cortex-M0 TRM 6.1.3, Cortex-M0+ TRM 7.1.3, Cortex-M23 TRM 7.1.3): the first such core is
// announced through events.no_pcsr with its CPUID, each DEMCR this set-up changed is put back
// as found, and nothing is returned. Returns the first round on success.
std::optional<std::vector<uint32_t>> set_up_pcsr(TargetEvents& events, const std::vector<DebugWordAccess>& cores,
                                                 const std::function<std::vector<uint32_t>()>& first_round);

// OpenOCD's targets (`target names`) besides `current`, each with its type as `cget -type`
// gives it ("stm32h7x.cpu1 (cortex_m)"), leaving out bare access ports (mem_ap).
std::vector<std::string> other_openocd_cores(const std::string& names, const std::string& current,
                                             const std::function<std::string(const std::string&)>& type_of);
// The cortex_m targets among other_openocd_cores' list `unsampled` that OpenOCD has examined
// (`examined`), taken out of it in order: the cores sampled besides the current target.
std::vector<std::string> take_examined_cortex_m(std::vector<std::string>& unsampled,
                                                const std::function<bool(const std::string&)>& examined);

} // namespace mcuprof::sources
