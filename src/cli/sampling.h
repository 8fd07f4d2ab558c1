#pragma once
// What the commands that sample a live target share (record, top): the options that choose
// and pace the sampling method, the source they build, and the samples
// file's header.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "mcuprof/image/image_set.h"
#include "mcuprof/link/link.h"
#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/sampler/openocd_launch.h"
#include "mcuprof/sampler/watched_variable.h"
#include "interrupt.h"
#include "options.h"
#include "qemu_options.h"

namespace mcuprof::cli {

struct SamplingOptions {
    std::string gdb;
    unsigned baud = 0;                                     // --gdb DEVICE: the line's speed (0: 115200)
    std::string openocd;
    std::string stlink;                                    // --stlink HOST[:PORT] (an stlink-server) or usb[:SERIAL]
    std::string chip;                                      // --chip NAME: OpenOCD's target/NAME.cfg, started by mcuprof
    std::string probe;                                     // --probe: the probe that OpenOCD drives
    std::string mode;
    std::string qmp;
    std::string pace = "wall";
    std::string interval;
    std::string duration;
    std::string shape = "exponential";
    double jitter = 0.5;
    uint64_t samples = 0;
    uint64_t seed = 0;
    std::string batch;                                     // --mode pcsr: PCSR reads per Tcl round trip
    std::string pcsr_read;                                 // --mode pcsr: read_memory or profile
    std::string max_halted;                                // halting: the halted-share budget, percent
    bool stacks = false;                                   // unwind the call stack at every halt
    uint32_t stack_bytes = 512;
    bool no_verify = false;                                // a target that does not match the ELF: warn, sample
    bool halt_shared = false;                              // --stlink: halt beside other programs on the probe
    QemuOptions qemu;                                      // --qemu: mcuprof starts QEMU itself
};

// The sampling options typed, every value checked (check_sampling_options): what
// make_sample_source builds the sampler from, before any image or link is opened.
struct LiveSampling {
    enum class Link { gdb, openocd, stlink, qemu };
    Link link = Link::gdb;
    transport::LinkAddress gdb;              // Link::gdb: TCP or a serial line
    transport::Endpoint openocd;             // Link::openocd: its Tcl port (unless mcuprof starts it)
    std::optional<sources::OpenocdLaunch> openocd_launch;   // Link::openocd, --chip/--probe: the OpenOCD to start
    transport::Endpoint stlink;              // Link::stlink: the stlink-server
    std::optional<std::string> stlink_usb;   // Link::stlink, --stlink usb[:SERIAL]: the probe on USB (its serial)
    bool stlink_halt_shared = false;         // Link::stlink, --halt-shared: no pause beside other clients
    QemuOptions qemu;                        // Link::qemu: the run mcuprof records and replays
    sources::PacingOptions pacing;           // wall, icount (--qemu's replay too) or pcsr, and its waits
    bool interval_given = false;             // --interval; --qemu without it spreads the samples over the run
    bool pcsr_profile = false;               // --pcsr-read profile: OpenOCD's `profile` reads DWT_PCSR
    std::optional<uint32_t> stack_window;    // --stacks: the bytes of stack read with each halt
    bool no_verify = false;
    std::optional<uint64_t> samples;         // --samples
    std::optional<std::chrono::nanoseconds> duration;   // --duration

    // When sampling ends: --samples and --duration; with neither, `default_samples` (0: until stopped).
    sources::SamplingPlan plan(uint64_t default_samples) const;
};

// Adds --gdb, --openocd, --stlink, --chip, --probe, --mode, --samples, --duration, --interval, --shape, --jitter, --pace,
// --qmp, --seed, --max-halted, --stacks and --stack-bytes, bound to `options`.
void add_sampling_options(boost::program_options::options_description& description, SamplingOptions& options);

// The options above but --gdb: those that mean nothing when no sampling is done.
const std::vector<std::string>& sampling_option_names();
// One link (--gdb, --openocd, --stlink, --chip with --probe, or --qemu), the options that go only with another one or its
// value (--jitter with --shape uniform, --qmp with --pace icount, not --duration with --qemu,
// --by var:NAME, the grouping `by`, not with --mode pcsr), and every value, typed. Throws
// UsageError; touches neither an image nor the link.
LiveSampling check_sampling_options(const CommandLine& line, const SamplingOptions& options, const std::string& by);

// Builds the sampler the options ask for, for the images the target runs: their call-frame
// information gives the unwinder (--stacks; an ELF without it is an error), the main image's
// DWARF the RTOS whose tasks tag the samples; every image is what the target is checked
// against before the first sample (--no-verify: a warning). `variable`: --by var:NAME's, read
// at every halt (check_live_grouping).
std::unique_ptr<sources::SampleSource> make_sample_source(const LiveSampling& sampling,
                                                         const std::optional<sources::WatchedVariable>& variable,
                                                         const core::ImageSet& images);

// What --by needs of the main image when the samples come from a live link, checked before the
// link is touched: line tables (line), the DWARF of an RTOS mcuprof reads (task), the variable
// (var:NAME: it exists and has a readable type), which it returns for the sampler to read.
// mcuprof::Error.
std::optional<sources::WatchedVariable> check_live_grouping(const core::Image& main, const std::string& by);


} // namespace mcuprof::cli
