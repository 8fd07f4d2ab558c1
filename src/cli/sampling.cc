#include "sampling.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include <unistd.h>

#include "mcuprof/sources/openocd_sampler.h"
#include "mcuprof/sources/rsp_sampler.h"
#include "mcuprof/transport/tcp_connection.h"
#include "commands.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

std::atomic<bool> StopOnSignal::requested{false};

namespace {

extern "C" void on_stop_signal(int)
{
    StopOnSignal::requested.store(true);
}

} // namespace

StopOnSignal::StopOnSignal()
{
    requested.store(false);
    previous_int_ = std::signal(SIGINT, on_stop_signal);
    previous_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopOnSignal::~StopOnSignal()
{
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
}

void add_sampling_options(po::options_description& description, SamplingOptions& o)
{
    static const std::string batch_help = "--mode pcsr: DWT_PCSR reads per Tcl round trip, 1 to 10000 (default " +
                                          std::to_string(sources::OpenocdSamplerOptions{}.batch) +
                                          "); the random wait goes between batches";
    description.add_options()
        ("gdb", po::value(&o.gdb)->value_name("HOST:PORT"), "GDB remote server: QEMU -gdb, OpenOCD's GDB port, a probe's")
        ("openocd", po::value(&o.openocd)->value_name("HOST:PORT"), "OpenOCD's Tcl RPC port (6666 by default): sample "
                                                                    "through OpenOCD instead of GDB (--mode)")
        ("mode", po::value(&o.mode)->value_name("MODE"), "--openocd: halt (halt, read pc lr sp xPSR, resume; one round "
                                                         "trip per sample) or pcsr (DWT_PCSR read while the core runs)")
        ("batch", po::value(&o.batch)->value_name("N"), batch_help.c_str())
        ("pcsr-read", po::value(&o.pcsr_read)->value_name("HOW"),
         "--mode pcsr: read_memory (default; --batch reads per Tcl round trip) or profile (OpenOCD's profile, 1024 "
         "reads per chunk, one non-incrementing block read; OpenOCD on this machine; order kept between chunks only)")
        ("samples", po::value(&o.samples)->value_name("N"), "stop after N samples")
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
        ("seed", po::value(&o.seed)->value_name("N"), "seed of the interval generator (default: random)");
}

std::unique_ptr<sources::SampleSource> make_sample_source(const SamplingOptions& o)
{
    if (o.gdb.empty() == o.openocd.empty())
        throw UsageError("exactly one of --gdb HOST:PORT and --openocd HOST:PORT is required");
    if (o.openocd.empty() && !o.mode.empty())
        throw UsageError("--mode goes with --openocd");
    if (!o.batch.empty() && o.mode != "pcsr")
        throw UsageError("--batch goes with --openocd HOST:PORT --mode pcsr");

    sources::RspSamplerOptions options;
    if (!o.gdb.empty())
        options.gdb = transport::Endpoint::parse(o.gdb, "--gdb");
    if (o.pace == "icount") {
        options.pacing = sources::Pacing::icount;
        if (!o.qmp.empty())
            options.qmp = transport::Endpoint::parse(o.qmp, "--qmp");
        options.interval = o.interval.empty() ? 20000.0 : parse_count(o.interval, "--interval");
    } else if (o.pace == "wall") {
        options.interval =
            o.interval.empty() ? 1e-3 : std::chrono::duration<double>(parse_duration(o.interval, "--interval")).count();
    } else {
        throw UsageError("--pace takes wall or icount, not '" + o.pace + "'");
    }
    if (o.shape == "exponential")
        options.shape = sources::IntervalGenerator::Shape::exponential;
    else if (o.shape == "uniform")
        options.shape = sources::IntervalGenerator::Shape::uniform;
    else if (o.shape == "fixed")
        options.shape = sources::IntervalGenerator::Shape::fixed;
    else
        throw UsageError("--shape takes exponential, uniform or fixed, not '" + o.shape + "'");
    options.jitter = o.jitter;
    options.seed = o.seed;
    options.stacks = o.stacks;
    options.tasks = o.tasks;

    if (o.openocd.empty())
        return std::make_unique<sources::RspHaltingSampler>(options);
    if (o.pace != "wall")
        throw UsageError("--pace icount goes with --gdb");
    if (o.stacks)
        throw UsageError("--stacks goes with --gdb (OpenOCD's GDB port serves it too)");
    sources::OpenocdSamplerOptions tcl;
    tcl.tcl = transport::Endpoint::parse(o.openocd, "--openocd");
    if (o.mode == "halt" || o.mode.empty())
        tcl.mode = sources::OpenocdMode::halt;
    else if (o.mode == "pcsr")
        tcl.mode = sources::OpenocdMode::pcsr;
    else
        throw UsageError("--mode takes halt or pcsr, not '" + o.mode + "'");
    tcl.shape = options.shape;
    tcl.interval = options.interval;
    tcl.jitter = options.jitter;
    tcl.seed = options.seed;
    if (!o.batch.empty()) {
        const double reads = parse_count(o.batch, "--batch");
        if (reads != std::floor(reads) || reads > 10000)
            throw UsageError("--batch takes a whole number from 1 to 10000, not '" + o.batch + "'");
        tcl.batch = unsigned(reads);
    }
    if (o.pcsr_read == "profile" && o.mode == "pcsr")
        tcl.pcsr_profile_gmon =
            (std::filesystem::temp_directory_path() / ("mcuprof-pcsr-" + std::to_string(::getpid()) + ".gmon")).string();
    else if (!o.pcsr_read.empty() && !(o.pcsr_read == "read_memory" && o.mode == "pcsr"))
        throw UsageError("--pcsr-read takes read_memory or profile, with --mode pcsr; not '" + o.pcsr_read + "'");
    return std::make_unique<sources::OpenocdSampler>(tcl);
}

sources::SamplingPlan sampling_plan(const SamplingOptions& o, uint64_t default_samples)
{
    sources::SamplingPlan plan;
    if (o.samples != 0)
        plan.samples = o.samples;
    if (!o.duration.empty())
        plan.duration = parse_duration(o.duration, "--duration");
    if (!plan.samples && !plan.duration && default_samples != 0)
        plan.samples = default_samples;
    return plan;
}

nlohmann::json recording_header(const sources::SampleSource& source, const std::string& elf)
{
    nlohmann::json header = source.describe();
    header["elf"] = elf;
    header["started"] =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return header;
}

} // namespace mcuprof::cli
