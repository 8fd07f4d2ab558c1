#pragma once
// What the commands that sample a live target share (record, top): the options that choose
// and pace the sampling method, the source they build, and the samples
// file's header.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "mcuprof/sources/live.h"
#include "interrupt.h"
#include "options.h"
#include "qemu_options.h"

namespace mcuprof::cli {

struct SamplingOptions {
    std::string gdb;
    unsigned baud = 0;                                     // --gdb DEVICE: the line's speed (0: 115200)
    std::string openocd;
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
    QemuOptions qemu;                                      // --qemu: mcuprof starts QEMU itself
};

// Adds --gdb, --openocd, --mode, --samples, --duration, --interval, --shape, --jitter, --pace,
// --qmp, --seed, --max-halted, --stacks and --stack-bytes, bound to `options`.
void add_sampling_options(boost::program_options::options_description& description, SamplingOptions& options);

// The options above but --gdb: those that mean nothing when no sampling is done.
const std::vector<std::string>& sampling_option_names();
// One link (--gdb, --openocd or --qemu), and the options that go only with another one or its
// value (--jitter with --shape uniform, --qmp with --pace icount, not --duration with --qemu...).
// The values themselves make_sample_source checks; neither touches the link.
void check_sampling_options(const CommandLine& line, const SamplingOptions& options);

// Checks the options' values (UsageError) and builds the sampler they ask for, for the firmware in
// `elf`: its DWARF gives the unwinder (--stacks) and the RTOS whose tasks tag the samples.
std::unique_ptr<sources::SampleSource> make_sample_source(const SamplingOptions& options, const std::string& elf);

// --samples and --duration; with neither, `default_samples` (0: until stopped).
sources::SamplingPlan sampling_plan(const SamplingOptions& options, uint64_t default_samples);

// The samples file's header: what the source says of itself, the ELF and the start time.
nlohmann::json recording_header(const sources::SampleSource& source, const std::string& elf);

// The recording's event for a task met while sampling: its control block and name.
nlohmann::json task_event(uint32_t control_block, const std::string& name);

} // namespace mcuprof::cli
