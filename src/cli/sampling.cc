#include "sampling.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <unistd.h>

#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/unwinder.h"
#include "mcuprof/error.h"
#include "mcuprof/sampler/firmware_check.h"
#include "mcuprof/sampler/openocd_sampler.h"
#include "mcuprof/target/pcsr_profile_reader.h"
#include "mcuprof/sampler/rtos_awareness.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/sampler/rsp_sampler.h"
#include "mcuprof/sampler/stlink_sampler.h"
#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/sampler/watched_variable.h"
#include "commands.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

// --stlink usb[:SERIAL]: the probe itself on USB; its serial, empty for the first one found.
std::optional<std::string> stlink_usb_serial(const std::string& text)
{
    if (text == "usb")
        return std::string();
    if (text.rfind("usb:", 0) == 0 && text.size() > 4)
        return text.substr(4);
    return std::nullopt;
}

// --stlink HOST[:PORT]: ST's stlink-server, 7184 (its default port) when no port is given.
transport::Endpoint stlink_endpoint(const std::string& text)
{
    return server_endpoint(text, "--stlink", 7184, "an stlink-server, ");
}

} // namespace

void add_sampling_options(po::options_description& description, SamplingOptions& o)
{
    static const std::string batch_help = "--mode pcsr, pcsr,halt: DWT_PCSR reads per Tcl round trip (--stlink: per USB command, up to 1024 each), 1 to 10000 (default " +
                                          std::to_string(sources::PacingOptions{}.batch) +
                                          "); the random wait goes between batches";
    description.add_options()
        ("gdb", po::value(&o.gdb)->value_name("HOST:PORT|DEVICE"), "GDB remote server: QEMU -gdb, OpenOCD's GDB port, "
                                                                   "a probe's; or a serial device (/dev/ttyACM0: a Black "
                                                                   "Magic Probe) or pty")
        ("baud", po::value(&o.baud)->value_name("N"), "--gdb DEVICE: the serial line's speed (default 115200)")
        ("openocd", po::value(&o.openocd)->value_name("HOST[:PORT]"),
         "OpenOCD's Tcl RPC port (6666 by default): sample through OpenOCD instead of GDB (--mode)")
        ("stlink", po::value(&o.stlink)->value_name("HOST[:PORT]|usb[:SERIAL]"),
         "an ST-Link through ST's stlink-server (port 7184 by default), shared with a debugger on the same server, or "
         "on USB itself (libusb; the first ST-Link, or the one with that serial): "
         "halts by the probe's own commands, 4 USB commands a sample, 5 with --stacks (--mode)")
        ("halt-shared", po::bool_switch(&o.halt_shared),
         "--stlink HOST: halt even while other programs have the probe open on the server (a reader such as "
         "STM32CubeMonitor); by default halts pause then, as a debugger beside them would see halts it never made")
        ("chip", po::value(&o.chip)->value_name("NAME"),
         "start OpenOCD with its target/NAME.cfg (stm32f4x, nrf52, rp2040, ...; docs/boards.md) and --probe, sample "
         "over it, stop it at the end")
        ("probe", po::value(&o.probe)->value_name("PROBE"),
         "--chip: stlink, cmsis-dap, jlink, or stlink-server[:PORT] (ST's shared server on this machine, or the vprobe)")
        ("mode", po::value(&o.mode)->value_name("MODE"), "--openocd, --chip, --stlink: halt (halt, read pc lr sp xPSR, "
                                                         "resume; one round trip per sample), pcsr (DWT_PCSR read "
                                                         "while the core runs; a core without it is an error) or "
                                                         "pcsr,halt (pcsr, or halts where a core has no DWT_PCSR)")
        ("batch", po::value(&o.batch)->value_name("N"), batch_help.c_str())
        ("pcsr-read", po::value(&o.pcsr_read)->value_name("HOW"),
         "--mode pcsr, pcsr,halt: read_memory (default; --batch reads per Tcl round trip) or profile (OpenOCD's profile, each "
         "chunk one call sized by time to up to 10000 reads or --batch, 1024 per non-incrementing block read; "
         "OpenOCD on this machine; order kept between chunks only)")
        ("samples", whole_number(o.samples, "samples")->value_name("N"), "stop after N samples")
        ("duration", po::value(&o.duration)->value_name("TIME"), "stop after this long (100ms, 10s, 2min)")
        ("interval", po::value(&o.interval)->value_name("TIME|N"),
         "mean interval between samples: a time (wall pacing, default 1ms) or an instruction count (icount pacing, "
         "default 20000)")
        ("shape", po::value(&o.shape)->value_name("NAME"), "exponential (default), uniform (mean +- jitter) or fixed "
                                                           "(prone to lockstep; for experiments)")
        ("jitter", po::value(&o.jitter)->value_name("F"), "uniform shape: interval spread as a fraction of the mean")
        ("pace", po::value(&o.pace)->value_name("CLOCK"), "wall (default) or icount: stops at exact instruction counts "
                                                          "through QEMU record/replay (-icount shift=0,rr=replay)")
        ("qmp", po::value(&o.qmp)->value_name("HOST:PORT"), "--pace icount: QEMU's QMP port for query-replay (default: "
                                                           "QEMU's monitor through the GDB connection)")
        ("seed", po::value(&o.seed)->value_name("N"), "seed of the interval generator (default: random)")
        ("max-halted", po::value(&o.max_halted)->value_name("PERCENT"),
         "halting: keep the target halted at most this share of the time by lengthening the mean interval")
        ("stacks", po::bool_switch(&o.stacks), "unwind the call stack at every halt (DWARF call-frame information, "
                                               "exception frames): report --by stack, inclusive shares")
        ("stack-bytes", po::value(&o.stack_bytes)->value_name("N"), "--stacks: bytes of stack read with each halt "
                                                                    "(default 512; deeper frames cost more reads)")
        ("no-verify", po::bool_switch(&o.no_verify), "sample even when the target's memory or CPUID does not match "
                                                     "the ELF (a warning, kept in the recording, instead of an error)");
    add_qemu_options(description, o.qemu);
}

const std::vector<std::string>& sampling_option_names()
{
    static const std::vector<std::string> names{"openocd", "stlink", "chip", "probe", "mode",  "batch", "pcsr-read", "samples",
                                                "duration", "interval", "shape", "jitter", "pace",
                                                "qmp",      "seed",  "stacks", "stack-bytes", "max-halted",
                                                "qemu",     "qemu-arg", "instructions", "census", "truth-plugin",
                                                "no-verify", "halt-shared"};
    return names;
}

namespace {

// --mode pcsr or pcsr,halt: DWT_PCSR reads, the latter falling back to halts where a core
// has none. Options of pcsr mode go with both, and those it refuses both refuse (a
// recording's kind must not depend on the core it meets).
bool reads_pcsr(const SamplingOptions& o)
{
    return o.mode == "pcsr" || o.mode == "pcsr,halt";
}

// The number `text` spells in full, if it is one.
std::optional<double> plain_number(const std::string& text)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

// --pace, --interval, --shape, --jitter, --seed, --max-halted, --qmp; with --mode pcsr its
// batch. --qemu samples its replay by instructions, so its --interval is a count.
sources::PacingOptions pacing_options(const SamplingOptions& o)
{
    sources::PacingOptions pacing;
    if (o.pace == "icount" || !o.qemu.machine.empty()) {
        pacing.pacing = sources::Pacing::icount;
        if (!o.qmp.empty())
            pacing.qmp = transport::Endpoint::parse(o.qmp, "--qmp");
        pacing.interval = o.interval.empty() ? 20000.0 : parse_count(o.interval, "--interval");
    } else {
        if (!o.interval.empty() && o.interval.find_first_not_of("0123456789.") == std::string::npos)
            throw UsageError("--interval takes a time with wall pacing (100us, 2ms), not '" + o.interval +
                             "'; a count of instructions goes with --pace icount");
        pacing.interval =
            o.interval.empty() ? 1e-3 : std::chrono::duration<double>(parse_duration(o.interval, "--interval")).count();
    }
    static const std::map<std::string, sources::IntervalGenerator::Shape> shapes{
        {"exponential", sources::IntervalGenerator::Shape::exponential},
        {"uniform", sources::IntervalGenerator::Shape::uniform},
        {"fixed", sources::IntervalGenerator::Shape::fixed}};
    const auto shape = shapes.find(o.shape);
    if (shape == shapes.end())
        throw UsageError("--shape takes exponential, uniform or fixed, not '" + o.shape + "'");
    pacing.shape = shape->second;
    pacing.jitter = o.jitter;
    pacing.seed = o.seed;
    if (!o.max_halted.empty()) {
        const std::optional<double> percent = plain_number(o.max_halted);
        if (!percent || !(*percent > 0 && *percent < 100))
            throw UsageError("--max-halted takes a percentage above 0 and below 100 (50 for half the time), not '" +
                             o.max_halted + "'");
        pacing.max_halted = *percent / 100;
    }
    if (reads_pcsr(o)) {
        pacing.pacing = sources::Pacing::pcsr;
        pacing.pcsr_fallback = o.mode == "pcsr,halt";
        if (!o.batch.empty()) {
            const double reads = parse_count(o.batch, "--batch");
            if (reads != std::floor(reads) || reads > 10000)
                throw UsageError("--batch takes a whole number from 1 to 10000, not '" + o.batch + "'");
            pacing.batch = unsigned(reads);
        } else if (o.pcsr_read == "profile") {   // a batch is one `profile` call: up to all the reads it may make
            pacing.batch = sources::PcsrProfileReader::most_reads_per_call;
        }
    }
    return pacing;
}

} // namespace

LiveSampling check_sampling_options(const CommandLine& line, const SamplingOptions& o, const std::string& by)
{
    const bool qemu = !o.qemu.machine.empty();
    line.require_one_of({"gdb", "openocd", "stlink", "chip", "qemu"});
    line.not_with({"duration"}, qemu, "--qemu MACHINE, which ends by instructions: use --samples or --instructions");
    line.not_with({"qmp"}, qemu, "--qemu MACHINE, which reads the replay's count over the gdbstub");
    if (o.pace != "wall" && o.pace != "icount")
        throw UsageError("--pace takes wall or icount, not '" + o.pace + "'");
    line.only_with({"qmp"}, o.pace == "icount", "--pace icount");
    line.only_with({"baud"}, !o.gdb.empty(), "--gdb DEVICE");
    const bool openocd = !o.openocd.empty() || !o.chip.empty();
    line.only_with({"mode"}, openocd || !o.stlink.empty(), "--openocd, --chip or --stlink");
    line.only_with({"probe"}, !o.chip.empty(), "--chip NAME");
    line.only_with({"halt-shared"}, !o.stlink.empty() && !stlink_usb_serial(o.stlink) && o.mode != "pcsr",
                   "--stlink HOST[:PORT] halting (an stlink-server's; --mode pcsr never halts)");
    if (!o.chip.empty() && o.probe.empty())
        throw UsageError("--chip " + o.chip + " needs --probe: stlink, cmsis-dap, jlink or stlink-server[:PORT]");
    if ((openocd || !o.stlink.empty()) && o.pace != "wall")
        throw UsageError("--pace icount goes with --gdb");
    if (!o.mode.empty() && o.mode != "halt" && !reads_pcsr(o))
        throw UsageError("--mode takes halt, pcsr or pcsr,halt, not '" + o.mode + "'");
    const bool pcsr = reads_pcsr(o);
    line.only_with({"batch"}, pcsr, "--mode pcsr or pcsr,halt");
    line.only_with({"pcsr-read"}, openocd, "--openocd or --chip (OpenOCD's own commands)");
    if (!o.pcsr_read.empty() && !((o.pcsr_read == "read_memory" || o.pcsr_read == "profile") && pcsr))
        throw UsageError("--pcsr-read takes read_memory or profile, with --mode pcsr or pcsr,halt; not '" +
                         o.pcsr_read + "'");
    line.only_with({"max-halted"}, o.pace == "wall" && !pcsr && !qemu,
                   "halting at wall-clock pacing (--pace wall, --mode halt)");
    // pcsr,halt halts a core without DWT_PCSR only: what needs halts is refused with it as with pcsr.
    const std::string halts = o.mode == "pcsr,halt" ? " halts only a core without DWT_PCSR" : " does not halt";
    line.not_with({"stacks"}, pcsr, "--mode " + o.mode + ", which" + halts + ": stacks need halts (--mode halt)");
    line.only_with({"qemu-arg", "instructions", "census", "truth-plugin"}, qemu, "--qemu MACHINE");
    line.only_with({"jitter"}, o.shape == "uniform", "--shape uniform");
    line.only_with({"stack-bytes"}, o.stacks, "--stacks");
    if (o.stacks && (o.stack_bytes < 32 || o.stack_bytes > 65536 || o.stack_bytes % 4 != 0))
        throw UsageError("--stack-bytes takes a multiple of 4 from 32 to 65536");
    if (!core::variable_of_grouping(by).empty() && pcsr)
        throw UsageError("--by var:NAME reads the variable at each halt, and --mode " + o.mode + halts);

    LiveSampling s;
    if (qemu) {
        s.link = LiveSampling::Link::qemu;
        s.qemu = o.qemu;
    } else if (!o.openocd.empty()) {
        s.link = LiveSampling::Link::openocd;
        s.openocd = openocd_endpoint(o.openocd);   // a usage error now, not at the link
    } else if (!o.chip.empty()) {
        s.link = LiveSampling::Link::openocd;
        s.openocd_launch = openocd_launch_of(o.chip, o.probe);
    } else if (!o.stlink.empty()) {
        s.link = LiveSampling::Link::stlink;
        s.stlink_usb = stlink_usb_serial(o.stlink);
        if (!s.stlink_usb)
            s.stlink = stlink_endpoint(o.stlink);
        s.stlink_halt_shared = o.halt_shared;
    } else {
        s.gdb = transport::LinkAddress::parse(o.gdb, "--gdb", o.baud);
    }
    s.pacing = pacing_options(o);
    s.interval_given = !o.interval.empty();
    s.pcsr_profile = pcsr && o.pcsr_read == "profile";
    if (o.stacks)
        s.stack_window = o.stack_bytes;
    s.no_verify = o.no_verify;
    if (o.samples != 0)
        s.samples = o.samples;
    if (!o.duration.empty())
        s.duration = parse_duration(o.duration, "--duration");
    return s;
}

sources::SamplingPlan LiveSampling::plan(uint64_t default_samples) const
{
    sources::SamplingPlan plan;
    plan.samples = samples;
    plan.duration = duration;
    if (!plan.samples && !plan.duration && default_samples != 0)
        plan.samples = default_samples;
    return plan;
}

namespace {

// --stacks: the unwinder from the images' call-frame information; the RTOS, when the main
// image's DWARF shows one; the variable --by var:NAME reads; the check of the target against
// the images.
sources::HaltExtras halt_extras(const LiveSampling& s, const std::optional<sources::WatchedVariable>& variable,
                                const core::ImageSet& images)
{
    sources::HaltExtras extras;
    if (s.stack_window) {
        sources::StackSamplingOptions stacks;
        stacks.unwinder = std::make_shared<const core::Unwinder>(images);
        // Without call-frame information the prologues of the symbol table's functions are read;
        // without those either, nothing can be unwound.
        if (!stacks.unwinder->has_frame_info() && images.symbols().functions().empty())
            throw mcuprof::Error(images.main().path(), ".symtab",
                                 "--stacks unwinds through call-frame information or the functions' prologues, and the "
                                 "ELF has neither .debug_frame, .ARM.exidx nor function symbols (build with -g, or do not "
                                 "strip the symbol table)");
        stacks.window_bytes = *s.stack_window;
        extras.stacks = stacks;
    }
    extras.tasks = sources::detect_rtos(images.main());   // the kernel's variables: the main image's DWARF
    extras.variable = variable;
    extras.firmware_check = sources::firmware_check(images, s.no_verify);
    return extras;
}

} // namespace

std::optional<sources::WatchedVariable> check_live_grouping(const core::Image& main, const std::string& by)
{
    const std::string& elf = main.path();
    if (by == "line" && !main.has_line_tables())
        throw mcuprof::Error(elf, ".debug_line", "--by line needs the DWARF line tables, and the ELF has none (build with -g)");
    if (const std::string_view variable = core::variable_of_grouping(by); !variable.empty())
        return sources::find_watched_variable(main, std::string(variable));   // exists, of a readable type
    if (by != "task")
        return std::nullopt;
    if (!main.has_debug_info())
        throw mcuprof::Error(elf, ".debug_info",
                             "--by task reads the running task through the RTOS's variables in the DWARF, and the ELF "
                             "has none (build with -g)");
    if (!sources::detect_rtos(main))
        throw mcuprof::Error(elf, ".debug_info",
                             "--by task: the DWARF shows no RTOS mcuprof can read (FreeRTOS's pxCurrentTCB, "
                             "Zephyr's _kernel; docs/rtos.md)");
    return std::nullopt;
}

std::unique_ptr<sources::SampleSource> make_sample_source(const LiveSampling& s,
                                                         const std::optional<sources::WatchedVariable>& variable,
                                                         const core::ImageSet& images)
{
    if (s.link == LiveSampling::Link::qemu)
        return make_qemu_sample_source(s, variable, images);
    const sources::HaltExtras extras = halt_extras(s, variable, images);
    if (s.link == LiveSampling::Link::openocd) {
        sources::OpenocdSamplerOptions tcl;
        tcl.tcl = s.openocd;
        tcl.pacing = s.pacing;
        tcl.extras = extras;
        if (s.pcsr_profile)
            tcl.pcsr_profile_gmon =
                (std::filesystem::temp_directory_path() / ("mcuprof-pcsr-" + std::to_string(::getpid()) + ".gmon"))
                    .string();
        if (!s.openocd_launch)
            return std::make_unique<sources::OpenocdSampler>(tcl);
        return sources::start_openocd_for_sampling(*s.openocd_launch, [&tcl](const transport::Endpoint& at) {
            sources::OpenocdSamplerOptions started = tcl;
            started.tcl = at;
            return std::make_unique<sources::OpenocdSampler>(started);
        });
    }
    if (s.link == LiveSampling::Link::stlink) {
        sources::StlinkSamplerOptions stlink;
        stlink.server = s.stlink;
        stlink.usb_serial = s.stlink_usb;
        stlink.halt_shared = s.stlink_halt_shared;
        stlink.pacing = s.pacing;
        stlink.extras = extras;
        return std::make_unique<sources::StlinkSampler>(stlink);
    }
    sources::RspSamplerOptions gdb;
    gdb.gdb = s.gdb;
    gdb.pacing = s.pacing;
    gdb.extras = extras;
    return std::make_unique<sources::RspHaltingSampler>(gdb);
}

} // namespace mcuprof::cli
