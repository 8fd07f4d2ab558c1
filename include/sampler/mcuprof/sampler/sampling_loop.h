#pragma once
// The one sampling loop every live link runs (docs/architecture.md, "Live sampling"): the
// plan and stop checks, the pacing, the halt-state reads with stacks and task tags, the
// running-time accounting, link-lost events and leaving the target running. How the next
// sample is reached is a pacing strategy:
//   wall    a random wall-clock wait, then a halt (any link);
//   icount  a stop at an exact instruction count, set with QEMU's replay_break (record/replay);
//   pcsr    batches of DWT_PCSR reads while the core runs, a random wait between batches;
//           where a core has no DWT_PCSR, a refusal or (pcsr_fallback) wall's halts.
#include <atomic>
#include <memory>
#include <optional>

#include "mcuprof/sampler/firmware_check.h"
#include "mcuprof/target/halting_target.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/sampler/rtos_awareness.h"
#include "mcuprof/sampler/stack_sampling.h"
#include "mcuprof/sampler/watched_variable.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::transport {
class QmpClient;
}

namespace mcuprof::sources {

enum class Pacing {
    wall,     // intervals of wall-clock time, each sample a halt
    icount,   // intervals of instructions, the stop by QEMU's replay_break (record/replay)
    pcsr,     // intervals of wall-clock time between batches of DWT_PCSR reads, no halts
};

struct PacingOptions {
    Pacing pacing = Pacing::wall;
    IntervalGenerator::Shape shape = IntervalGenerator::Shape::exponential;
    double interval = 1e-3;   // mean: seconds, or instructions when pacing by icount
    double jitter = 0.5;      // uniform shape only
    uint64_t seed = 0;        // 0: from the system's random source
    unsigned batch = 16;      // pcsr: DWT_PCSR reads per round trip
    // pcsr: a core without DWT_PCSR is sampled by halts, with a `fallback` event (--mode
    // pcsr,halt); otherwise the loop refuses it before the first sample (sources::Error).
    bool pcsr_fallback = false;
    std::optional<transport::Endpoint> qmp;   // icount: QMP for query-replay (else the GDB monitor)
    // wall: keep the halted share of the wall time under this fraction by lengthening the
    // mean wait (never below `interval`).
    std::optional<double> max_halted;

    // The seed, drawn from the system's random source when it is 0.
    uint64_t resolved_seed() const;
    // The recording header's pacing.
    RunHeader::Pacing header() const;
};

// What every halt reads besides pc, lr, sp and xPSR.
struct HaltExtras {
    std::optional<StackSamplingOptions> stacks;   // unwind the call stack at every halt
    std::optional<TaskLayout> tasks;              // tag each sample with the running task
    std::optional<FirmwareCheck> firmware_check;  // the target against the ELF, before the first sample
    std::optional<WatchedVariable> variable;      // read at every halt (--by var:NAME)
};

// QEMU's instruction count during a replay, through QMP or the GDB server's monitor. The
// constructor checks that QEMU replays (transport::Error otherwise).
class ReplayClock {
public:
    ReplayClock(HaltingTarget& target, const std::optional<transport::Endpoint>& qmp, transport::Duration timeout);
    ~ReplayClock();
    uint64_t now();

private:
    HaltingTarget& target_;
    std::unique_ptr<transport::QmpClient> qmp_;
};

// Halting an emulator by wall clock: the recording header's "bias", which every report of the
// recording shows as a warning.
inline constexpr const char* emulator_bias_warning =
    "QEMU halted by wall clock: the emulator's cost per instruction differs from the hardware's, so the "
    "halts land in proportion to QEMU's host time, not to target cycles (exception entry, device accesses "
    "and the ends of translation blocks get too many samples); for exact shares sample with --qemu MACHINE, "
    "or with --pace icount on a QEMU record/replay run (docs/live.md)";
// The same through OpenOCD, when the probe behind it is mcuprof's virtual probe: its halts and
// its DWT_PCSR reads (each a brief halt) stop QEMU by wall clock too.
inline constexpr const char* vprobe_bias_prefix =
    "behind OpenOCD is mcuprof's virtual probe, whose target is QEMU: ";
// The same where mcuprof speaks to the probe itself (--stlink): no OpenOCD in between.
inline constexpr const char* vprobe_stlink_bias_prefix =
    "the ST-Link is mcuprof's virtual probe, whose target is QEMU: ";

// A live sample source: one link's adapter driven by the shared loop.
class LiveSampler : public SampleSource {
public:
    // With icount pacing, checks that QEMU replays (transport::Error otherwise).
    LiveSampler(std::unique_ptr<HaltingTarget> target, const PacingOptions& pacing, const HaltExtras& extras,
                transport::Duration timeout);
    ~LiveSampler() override;

    RunHeader run_header() const override;
    SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) override;

private:
    std::unique_ptr<HaltingTarget> target_;
    PacingOptions pacing_;
    uint64_t seed_;
    HaltExtras extras_;
    std::unique_ptr<ReplayClock> replay_;
    bool behind_vprobe_ = false;   // the link ends in mcuprof's virtual probe (vprobe_signature.h)
};

// Samples `target` until the plan is met, `stop` is set, the target exits or the link drops;
// leaves it running. `replay` is needed for icount pacing. Never throws transport::Error.
SamplerStats run_sampling_loop(HaltingTarget& target, const PacingOptions& pacing, uint64_t seed,
                               const HaltExtras& extras, ReplayClock* replay, SampleSink& sink,
                               const SamplingPlan& plan, const std::atomic<bool>& stop);

} // namespace mcuprof::sources
